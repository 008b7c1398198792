import type { Message, Producer } from 'kafkajs';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { SideOutputTarget } from '../../plan/side-output-target.js';
import { kafkaClient } from '../kafka/client.js';
import type { SideOutputWriter } from './writer.js';

type KafkaTarget = Extract<SideOutputTarget, { kind: 'kafka' }>;

/**
 * A side output in a Kafka topic, through one idempotent producer (`acks: all`) in the driver. A
 * send starts as soon as the previous one came back, with every record that arrived meanwhile, as
 * the Kafka sink sends rows; `flush` waits until the brokers acknowledged everything written.
 * The topic must exist when the query starts: it is looked up then, and the producer connected.
 */
export class KafkaSideOutputWriter<T> implements SideOutputWriter<T> {
  private readonly producer: Producer;
  private pending: Message[] = [];
  private sending: Promise<void> | null = null;
  private failure: MillraceError | null = null;
  private reportFailure: (error: MillraceError) => void = () => {};
  private readonly where: string;

  constructor(
    /** The option, for messages: `deadLetters`, `lateRows`. */
    private readonly option: string,
    private readonly target: KafkaTarget,
    private readonly encode: (item: T) => Message,
  ) {
    this.where = `topic '${target.topic}' on ${target.brokers.join(',')}`;
    this.producer = kafkaClient(target.brokers, target.client).producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    });
  }

  async open(): Promise<void> {
    const admin = kafkaClient(this.target.brokers, this.target.client).admin();
    let topics: string[];
    try {
      await admin.connect();
      topics = await admin.listTopics();
      if (topics.includes(this.target.topic)) await this.producer.connect();
    } catch (e) {
      throw this.failed('cannot connect to write to', e);
    } finally {
      await admin.disconnect().catch(() => {});
    }
    if (!topics.includes(this.target.topic)) {
      throw new MillraceError(
        ErrorCode.SIDE_OUTPUT_WRITE_FAILED,
        `${this.option}: ${this.where} does not exist; create it first`,
      );
    }
  }

  onFailure(report: (error: MillraceError) => void): void {
    this.reportFailure = report;
  }

  write(item: T): void {
    if (this.failure !== null) return;
    this.pending.push(this.encode(item));
    if (this.sending === null) this.send();
  }

  async flush(): Promise<void> {
    while (this.sending !== null) await this.sending;
    if (this.failure !== null) throw this.failure;
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      await this.producer.disconnect().catch(() => {});
    }
  }

  /** Sends what is pending, then again while records keep coming. */
  private send(): void {
    const messages = this.pending;
    this.pending = [];
    this.sending = (async () => {
      try {
        await this.producer.send({ topic: this.target.topic, acks: -1, messages });
      } catch (e) {
        this.fail(e);
      }
      this.sending = null;
      if (this.failure === null && this.pending.length > 0) this.send();
    })();
  }

  private fail(cause: unknown): void {
    if (this.failure !== null) return;
    this.pending = [];
    this.failure = this.failed('cannot write to', cause);
    this.reportFailure(this.failure);
  }

  private failed(what: string, cause: unknown): MillraceError {
    return new MillraceError(
      ErrorCode.SIDE_OUTPUT_WRITE_FAILED,
      `${this.option}: ${what} ${this.where}: ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
  }
}
