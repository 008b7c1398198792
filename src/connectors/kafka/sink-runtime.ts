import type { Admin, Message, Producer, Transaction } from 'kafkajs';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { SinkRuntime } from '../sink-runtime.js';
import type { KafkaSinkSpec } from '../spec.js';
import { kafkaClient, kafkajs } from './client.js';
import { encodeValue, WATERMARK_FROM_HEADER, WATERMARK_HEADER } from './codec.js';

/**
 * One partition of the Kafka sink, in the worker that runs the sink task.
 *
 * Rows are encoded as they come and sent in the next send: a send starts as soon as the previous
 * one came back, with every row that arrived meanwhile, so a lone row goes out at once and a
 * burst goes out in few requests. At an epoch's end the partition waits for its sends.
 *
 * Exactly-once: a transactional producer (id `<prefix>-<partition>`, `<prefix>-<task>-<partition>`
 * for a group task; starting it fences any
 * earlier producer with the same id and aborts its open transaction) writes each epoch's rows in
 * one transaction. At the epoch's end the partition waits for its sends (a pre-commit) and holds
 * the transaction open; the driver, once it has logged the epoch's offsets (so that a redo would
 * cut the epoch the same way), asks it to commit (`commitEpoch`), and only then writes the
 * epoch's commit file. With the rows, in the same transaction, the partition commits "epoch E
 * done" as the offset of partition 0 of the sink's topic for a consumer group of its own
 * (`millrace-<query id>-sink-<partition>`, per task too). If the query dies after the transactions
 * committed and before the checkpoint did, the next run finishes the epoch's commit when every
 * partition records it ({@link allCommitted}); otherwise it redoes the epoch with the same input,
 * and a partition that reads its group offset and finds the epoch there drops the epoch's rows:
 * they are in Kafka already. Rows of
 * the next epoch wait (bounded by `maxBufferedRows`) while a transaction is held.
 */
/** A sink partition's name: a group task's partitions are named per task (every task has a partition 0). */
function sinkInstance(task: string | null, partition: number): string {
  return task === null ? `${partition}` : `${task}-${partition}`;
}

/** The consumer group whose offset records the epochs an exactly-once sink partition committed. */
export function epochsGroupId(queryId: string, task: string | null, partition: number): string {
  return `millrace-${queryId}-sink-${sinkInstance(task, partition)}`;
}

/**
 * Whether every partition of an exactly-once sink committed `epoch` (each records the epochs it
 * committed in its transactions, as the offset of its group): one that did not has its
 * transaction aborted by the next run's producer, and the epoch is to be redone. Brokers that
 * cannot say (unreachable) make it false: the epoch is redone, and its partitions, once they
 * reach the brokers, drop its rows where they committed them (the sink's own errors say why they
 * cannot).
 */
export async function allCommitted(
  spec: KafkaSinkSpec,
  epoch: number,
  context: { queryId: string; task: string | null; partitions: number },
): Promise<boolean> {
  const admin = kafkaClient(spec.brokers, spec.client).admin();
  try {
    await admin.connect();
    for (let p = 0; p < context.partitions; p++) {
      const groupId = epochsGroupId(context.queryId, context.task, p);
      const topics = await admin.fetchOffsets({ groupId, topics: [spec.topic!] });
      const offset = Number(topics[0]?.partitions.find((x) => x.partition === 0)?.offset ?? -1);
      if (offset < epoch + 1) return false;
    }
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

export class KafkaSinkRuntime implements SinkRuntime {
  private readonly producer: Producer;
  private readonly transactionalId: string | undefined;
  /** Resolves once connected (and, exactly-once, once the committed epochs are known). */
  private readonly ready: Promise<void>;
  private isReady = false;
  /** Exactly-once: epochs up to this one were committed to Kafka by an earlier run. */
  private committedThrough = -1;
  private epoch: number;
  private pending: { topic: string; message: Message }[] = [];
  private sending: Promise<void> | null = null;
  private failure: Error | null = null;
  /** Exactly-once: the open transaction of the epoch being written. */
  private txn: Transaction | null = null;
  /** Exactly-once: an epoch that ended, its transaction waiting for the driver's commit. */
  private held: { epoch: number; txn: Transaction } | null = null;
  private releaseWaiters: (() => void)[] = [];
  private reportFailure: (error: Error) => void = () => {};
  /** Exactly-once: the consumer group whose offset records the epochs committed (per query and partition). */
  private readonly epochsGroup: string;
  /** A repartition sink: the value of the watermark it passes on. */
  private watermarkValue = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly spec: KafkaSinkSpec,
    private readonly partition: number,
    queryId: string,
    firstEpoch: number,
    private readonly task: string | null,
  ) {
    this.epoch = firstEpoch;
    const instance = sinkInstance(task, partition);
    this.epochsGroup = epochsGroupId(queryId, task, partition);
    const kafka = kafkaClient(spec.brokers, spec.client);
    const createPartitioner =
      typeof spec.partitioner === 'function'
        ? ((() => spec.partitioner) as never)
        : spec.partitioner === 'legacy'
          ? kafkajs().Partitioners.LegacyPartitioner
          : kafkajs().Partitioners.DefaultPartitioner;
    if (spec.exactlyOnce) {
      this.transactionalId = `${spec.transactionalIdPrefix ?? `millrace-${queryId}`}-${instance}`;
      this.producer = kafka.producer({
        transactionalId: this.transactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
        transactionTimeout: spec.transactionTimeoutMs,
        allowAutoTopicCreation: false,
        createPartitioner,
      });
    } else {
      this.producer = kafka.producer({
        idempotent: spec.idempotent,
        maxInFlightRequests: spec.idempotent ? 1 : 5,
        allowAutoTopicCreation: false,
        createPartitioner,
      });
    }
    this.ready = this.start(kafka.admin());
    this.ready.then(
      () => {
        this.isReady = true;
      },
      (e) => {
        this.fail(this.failed('cannot connect', e));
      },
    );
  }

  private async start(admin: Admin): Promise<void> {
    await this.producer.connect();
    if (this.transactionalId === undefined) return;
    // kafkajs initialises the transactional id with the first transaction: begin (and end) one
    // now, so earlier producers with this id are fenced and their open transaction is aborted
    // before the group offset is read. What it says is then final.
    const fence = await this.producer.transaction();
    await fence.abort();
    try {
      await admin.connect();
      const topics = await admin.fetchOffsets({ groupId: this.epochsGroup, topics: [this.spec.topic!] });
      const offset = Number(topics[0]?.partitions.find((p) => p.partition === 0)?.offset ?? -1);
      this.committedThrough = offset > 0 ? offset - 1 : -1;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  onBackgroundError(fail: (error: Error) => void): void {
    this.reportFailure = fail;
    if (this.failure !== null) fail(this.failure);
  }

  write(row: unknown, sourceTime: number): unknown {
    if (this.failure !== null) throw this.failure;
    let topic: string;
    let message: Message;
    try {
      ({ topic, message } = this.encode(row));
      if (this.spec.timestamp === 'source') message.timestamp = String(Math.floor(sourceTime));
    } catch (e) {
      throw new MillraceError(
        ErrorCode.RECORD_NOT_ENCODABLE,
        `${this.spec.description}: a row cannot be written to Kafka: ${(e as Error).message}`,
        { cause: e },
      );
    }
    if (!this.isReady) {
      // The first rows wait for the connection (the task takes no more until it is up).
      this.pending.push({ topic, message });
      return this.ready.then(() => this.afterReady());
    }
    // Rows of an epoch an earlier run committed to Kafka are not written again.
    if (this.epoch <= this.committedThrough) return undefined;
    this.pending.push({ topic, message });
    if (this.held !== null) {
      // The last epoch's transaction waits for the driver: rows wait too, up to the bound.
      return this.pending.length >= this.spec.maxBufferedRows ? this.released() : undefined;
    }
    if (this.sending === null) this.send();
    else if (this.pending.length >= this.spec.maxBufferedRows) return this.drained();
    return undefined;
  }

  /** Resolves once every row handed over so far is acknowledged by the brokers. */
  async flush(): Promise<undefined> {
    await this.ready.catch(() => {});
    await this.released();
    if (this.pending.length > 0 && this.sending === null) this.send();
    await this.drained();
    return undefined;
  }

  /** A repartition sink passes on the watermark the downstream stage declares again. */
  watermark(input: number, value: number): void {
    if (input === this.spec.watermarkInput && value > this.watermarkValue) this.watermarkValue = value;
  }

  /**
   * Queues the watermark for every partition of the topic, at every epoch's end once there is one:
   * a downstream task that moved (and lost what it had heard) hears it again within an epoch, even
   * from an upstream task whose watermark stands still.
   */
  private queueWatermark(): void {
    const partitions = this.spec.watermarkPartitions;
    if (partitions === undefined || !Number.isFinite(this.watermarkValue)) return;
    const headers = {
      [WATERMARK_HEADER]: String(this.watermarkValue),
      [WATERMARK_FROM_HEADER]: this.task ?? '',
    };
    const timestamp = String(Date.now());
    for (let partition = 0; partition < partitions; partition++) {
      this.pending.push({ topic: this.spec.topic!, message: { partition, value: null, headers, timestamp } });
    }
  }

  epochEnd(epoch: number): Promise<undefined> {
    this.epoch = epoch + 1;
    return this.finishEpoch(epoch);
  }

  /**
   * Exactly-once: the driver logged the epoch, so a redo would cut it the same way: commit its
   * transaction, with the record that the epoch is done, and let the next epoch's rows go.
   */
  async commitEpoch(epoch: number): Promise<void> {
    const held = this.held;
    if (held === null || held.epoch !== epoch) return;
    try {
      const offsets = {
        consumerGroupId: this.epochsGroup,
        topics: [{ topic: this.spec.topic!, partitions: [{ partition: 0, offset: String(epoch + 1) }] }],
      };
      await retryReconnecting(() => held.txn.sendOffsets(offsets));
      await held.txn.commit();
    } catch (e) {
      const error = this.failed(
        `cannot commit the transaction of epoch ${epoch}`,
        e,
        ErrorCode.SINK_COMMIT_FAILED,
      );
      this.fail(error);
      throw error;
    }
    this.held = null;
    for (const w of this.releaseWaiters.splice(0)) w();
    if (this.pending.length > 0 && this.sending === null) this.send();
  }

  close(error: Error | null): Promise<void> {
    const closing = (async () => {
      // A graceful end waits for the last epoch's commit (the driver commits it before it stops).
      if (error === null && this.failure === null) await this.released();
      const open = [this.held?.txn, this.txn].filter((t): t is Transaction => t !== undefined && t !== null);
      this.held = null;
      this.txn = null;
      this.pending = [];
      for (const w of this.releaseWaiters.splice(0)) w();
      await this.sending?.catch(() => {});
      for (const t of open) await t.abort().catch(() => {});
      await this.producer.disconnect().catch(() => {});
    })();
    return error === null ? closing : closing.catch(() => {});
  }

  private async finishEpoch(epoch: number): Promise<undefined> {
    await this.ready.catch(() => {});
    if (this.failure !== null) throw this.failure;
    if (epoch <= this.committedThrough) {
      this.pending = [];
      return undefined;
    }
    // Exactly-once: the epoch before must be committed before this one's rows can be sent.
    await this.released();
    // The epoch's watermark goes after its rows, in its transaction.
    this.queueWatermark();
    if (this.pending.length > 0 && this.sending === null) this.send();
    await this.drained();
    if (this.txn !== null) {
      this.held = { epoch, txn: this.txn };
      this.txn = null;
    }
    return undefined;
  }

  /** Resolves once no epoch's transaction waits for the driver's commit. */
  private released(): Promise<void> {
    if (this.held === null) return Promise.resolve();
    return new Promise((resolve) => this.releaseWaiters.push(resolve));
  }

  private afterReady(): void {
    if (this.failure !== null) throw this.failure;
    if (this.epoch <= this.committedThrough) this.pending = [];
    if (this.pending.length > 0 && this.sending === null) this.send();
  }

  /** Resolves once everything handed over so far is acknowledged (rejects if a send failed). */
  private async drained(): Promise<void> {
    while (this.sending !== null) await this.sending;
    if (this.failure !== null) throw this.failure;
  }

  /** Sends what is pending, then again while rows keep coming. */
  private send(): void {
    const batch = this.pending;
    this.pending = [];
    const byTopic = new Map<string, Message[]>();
    for (const { topic, message } of batch) {
      let list = byTopic.get(topic);
      if (list === undefined) byTopic.set(topic, (list = []));
      list.push(message);
    }
    const request = {
      acks: -1,
      compression: this.spec.compression === 'gzip' ? 1 : 0,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    };
    this.sending = (async () => {
      try {
        if (this.transactionalId !== undefined) {
          this.txn ??= await this.producer.transaction();
          await this.txn.sendBatch(request);
        } else {
          await this.producer.sendBatch(request);
        }
      } catch (e) {
        this.fail(this.failed('cannot send', e));
        this.pending = [];
      }
      this.sending = null;
      if (this.failure === null && this.held === null && this.pending.length > 0) this.send();
    })();
  }

  private encode(row: unknown): { topic: string; message: Message } {
    const r = row as Record<string, unknown> | null;
    const shaped = r !== null && typeof r === 'object' && !Array.isArray(r) && 'value' in r;
    const topic = (shaped && typeof r.topic === 'string' ? r.topic : undefined) ?? this.spec.topic;
    if (topic === undefined)
      throw new MillraceError(ErrorCode.RECORD_NOT_ENCODABLE, 'the row names no topic and the sink has none');
    const message: Message = {
      key: shaped ? encodeValue(r.key, this.spec.keyEncoding) : null,
      value: encodeValue(shaped ? r.value : row, this.spec.valueEncoding),
    };
    if (shaped && typeof r.partition === 'number') message.partition = r.partition;
    if (shaped && r.headers !== undefined && r.headers !== null) {
      message.headers = r.headers as Record<string, string | Buffer>;
    }
    return { topic, message };
  }

  private fail(error: MillraceError): void {
    if (this.failure !== null) return;
    this.failure = error;
    this.reportFailure(error);
  }

  private failed(what: string, cause: unknown, code: ErrorCode = ErrorCode.TASK_FAILED): MillraceError {
    return new MillraceError(
      code,
      `${this.spec.description} partition ${this.partition}: ${what} (${this.spec.brokers.join(',')}): ${(cause as Error).message}`,
      { cause },
    );
  }
}

/**
 * kafkajs errors a new connection may cure. kafkajs gives up on a coordinator lookup at the first
 * broken connection ("Failed to find group coordinator"), where its other requests retry.
 */
const RECONNECTABLE = new Set([
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
]);

const RECONNECT_ATTEMPTS = 5;

/**
 * Runs a request that may be repeated, again after a broken connection (up to
 * {@link RECONNECT_ATTEMPTS} times, 50 ms apart and doubling). A transaction's `sendOffsets` may be:
 * it adds the offsets' group to the transaction and commits the offsets in it, both idempotent. Its
 * `commit` may not: kafkajs moves the transaction to committing first, and a second call is refused.
 */
async function retryReconnecting<T>(request: () => Promise<T>): Promise<T> {
  for (let attempt = 1, backoff = 50; ; attempt++, backoff *= 2) {
    try {
      return await request();
    } catch (e) {
      if (attempt >= RECONNECT_ATTEMPTS || !RECONNECTABLE.has((e as Error).name)) throw e;
      await new Promise((resolve) => setTimeout(resolve, backoff));
    }
  }
}
