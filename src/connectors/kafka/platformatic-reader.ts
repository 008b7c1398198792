import type { Admin, ConnectionOptions, Consumer, SASLOptions } from '@platformatic/kafka';
import { invalidArgument } from '../../errors.js';
import type { KafkaClientSettings } from '../../plan/kafka-settings.js';
import type { FetchedMessage } from './client.js';
import {
  byTopic,
  type KafkaReader,
  type PartitionRef,
  partitionKey,
  type ReaderOptions,
  ReadFailure,
  type ReadPartition,
  type ReadRequest,
} from './reader.js';

type Platformatic = typeof import('@platformatic/kafka');
/** A Fetch response (the library exports its functions, not this type). */
type FetchResponse = Awaited<ReturnType<Consumer['fetch']>>;
type FetchedPartitionData = FetchResponse['responses'][number]['partitions'][number];

/** The topic id of a broker that has none (Kafka before 2.8, and the project's test broker). */
const NO_TOPIC_ID = '00000000-0000-0000-0000-000000000000';
/** Record batch attributes (Kafka's `RecordBatch`). */
const LOG_APPEND_TIME = 0x08;
const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;

/**
 * A Kafka source's reader on `@platformatic/kafka` (Node 22.22 and later). One consumer, which
 * never joins a group, holds the metadata and lists offsets; each fetch target has a consumer of
 * its own, so its long polls and fetch session are its own. Targets are leader brokers; a topic
 * without a topic id (an old broker) is fetched by name, one topic per target, as such brokers
 * answer by name.
 *
 * Under `read_committed`, rows of aborted transactions are left out here, as Kafka's Java
 * consumer does it (the broker's list of aborted transactions against the batches' producers),
 * because the library keeps them when the abort marker falls outside the fetch.
 */
export class PlatformaticReader implements KafkaReader {
  private library: Platformatic | null = null;
  private main: Consumer | null = null;
  private admin: Promise<Admin> | null = null;
  private readonly fetchers = new Map<string, Consumer>();
  private topics: string[] = [];
  /** Topic ids by name, from the last metadata; and names by id. */
  private ids = new Map<string, string>();
  private names = new Map<string, string>();
  private readonly settings: ConnectionOptions & { clientId: string };
  private readonly isolation: 0 | 1;

  constructor(private readonly options: ReaderOptions) {
    this.settings = platformaticSettings('the Kafka source', options.client);
    this.isolation = options.isolationLevel === 'read_committed' ? 1 : 0;
  }

  async connect(topics: readonly string[]): Promise<void> {
    this.topics = [...new Set(topics)];
    try {
      this.library ??= await import('@platformatic/kafka');
      this.main = this.consumer(this.topics);
      if (this.topics.length > 0) await this.metadata(false);
    } catch (e) {
      await this.disconnect();
      throw classify(e);
    }
  }

  async disconnect(): Promise<void> {
    // Consumers close at once (`force`: no group to leave); the admin client takes no argument.
    const closing: Promise<void>[] = [...this.fetchers.values()].map((f) => f.close(true));
    this.fetchers.clear();
    if (this.main !== null) closing.push(this.main.close(true));
    this.main = null;
    const admin = await this.admin?.catch(() => null);
    this.admin = null;
    if (admin) closing.push(admin.close());
    await Promise.all(closing.map((c) => c.catch(() => {})));
  }

  async refreshMetadata(): Promise<void> {
    for (const f of this.fetchers.values()) f.clearMetadata();
    await this.metadata(true).catch(() => {});
  }

  forget(topic: string): void {
    this.topics = this.topics.filter((t) => t !== topic);
    this.main?.topics.untrack(topic);
    for (const f of this.fetchers.values()) f.topics.untrack(topic);
  }

  async topicPartitions(): Promise<Map<string, number[]>> {
    try {
      const admin = await this.adminClient();
      const names = await admin.listTopics();
      const out = new Map<string, number[]>();
      if (names.length === 0) return out;
      const md = await admin.metadata({ topics: names, forceUpdate: true });
      for (const [name, t] of md.topics)
        out.set(
          name,
          Array.from({ length: t.partitionsCount }, (_, p) => p),
        );
      return out;
    } catch (e) {
      throw classify(e);
    }
  }

  async fetchTargets(partitions: readonly PartitionRef[]): Promise<Map<string, PartitionRef[]>> {
    const md = await this.metadata(false).catch((e) => {
      throw classify(e);
    });
    const out = new Map<string, PartitionRef[]>();
    for (const part of partitions) {
      const t = md.topics.get(part.topic);
      if (t === undefined)
        throw new ReadFailure('unknown-topic', new Error(`topic ${part.topic} not in the metadata`));
      const leader = t.partitions[part.partition]?.leader ?? -1;
      if (leader < 0)
        throw new ReadFailure('other', new Error(`${part.topic}-${part.partition} has no leader`));
      const target = t.id === NO_TOPIC_ID ? `${leader}/${part.topic}` : String(leader);
      if (!out.has(target)) out.set(target, []);
      out.get(target)!.push(part);
    }
    return out;
  }

  async fetch(
    target: string,
    request: { maxWaitMs: number; maxBytes: number; partitions: readonly ReadRequest[] },
  ): Promise<ReadPartition[]> {
    const slash = target.indexOf('/');
    const node = Number(slash < 0 ? target : target.slice(0, slash));
    const byName = slash >= 0 ? target.slice(slash + 1) : null;
    const topics = new Map<
      string,
      {
        partition: number;
        fetchOffset: bigint;
        currentLeaderEpoch: number;
        lastFetchedEpoch: number;
        partitionMaxBytes: number;
      }[]
    >();
    const from = new Map<string, number>();
    for (const { topic, partition, offset, maxBytes } of request.partitions) {
      // An old broker is asked by topic name, a newer one by topic id.
      const id = byName ?? this.ids.get(topic) ?? topic;
      if (!topics.has(id)) topics.set(id, []);
      topics.get(id)!.push({
        partition,
        fetchOffset: BigInt(offset),
        currentLeaderEpoch: -1,
        lastFetchedEpoch: -1,
        partitionMaxBytes: maxBytes,
      });
      from.set(partitionKey(topic, partition), offset);
    }
    const topicOf = (id: string) => (id === NO_TOPIC_ID ? (byName ?? id) : (this.names.get(id) ?? id));
    let response: FetchResponse;
    try {
      response = await this.fetcher(target, byName).fetch({
        node,
        topics: [...topics].map(([topicId, partitions]) => ({ topicId, partitions })),
        isolationLevel: this.isolation,
        maxWaitTime: request.maxWaitMs,
        minBytes: 1,
        maxBytes: request.maxBytes,
      });
    } catch (e) {
      throw classify(e, topicOf);
    }
    const out: ReadPartition[] = [];
    for (const t of response.responses) {
      const topic = topicOf(t.topicId);
      for (const part of t.partitions) {
        const offset = from.get(partitionKey(topic, part.partitionIndex));
        if (offset !== undefined) out.push(this.readPartition(topic, offset, part));
      }
    }
    return out;
  }

  async listOffsets(
    partitions: readonly PartitionRef[],
    at: 'earliest' | 'latest',
  ): Promise<Map<string, number>> {
    const wanted = Object.fromEntries(byTopic(partitions, (p) => p.partition));
    const out = new Map<string, number>();
    try {
      const offsets = await this.client().listOffsets({
        topics: Object.keys(wanted),
        partitions: wanted,
        timestamp: at === 'earliest' ? -2n : -1n,
        isolationLevel: this.isolation,
      });
      for (const [topic, list] of offsets) {
        list.forEach((offset, partition) => {
          if (offset !== undefined) out.set(partitionKey(topic, partition), Number(offset));
        });
      }
    } catch (e) {
      throw classify(e);
    }
    // An answer that leaves a partition out is not taken as "nothing new there".
    const missing = partitions.filter((p) => !out.has(partitionKey(p.topic, p.partition)));
    if (missing.length > 0) {
      const list = missing.map((p) => `${p.topic}-${p.partition}`).join(', ');
      throw new ReadFailure('other', new Error(`the brokers listed no ${at} offset for ${list}`));
    }
    return out;
  }

  async commitOffsets(
    groupId: string,
    offsets: readonly (PartitionRef & { offset: number })[],
  ): Promise<void> {
    const topics = byTopic(offsets, ({ partition, offset }) => ({ partition, offset: BigInt(offset) }));
    try {
      await (await this.adminClient()).alterConsumerGroupOffsets({
        groupId,
        topics: [...topics].map(([name, partitionOffsets]) => ({ name, partitionOffsets })),
      });
    } catch (e) {
      throw classify(e);
    }
  }

  /** A fetched partition's records from `from`, markers and (under read_committed) aborted rows left out. */
  private readPartition(topic: string, from: number, part: FetchedPartitionData): ReadPartition {
    const committedOnly = this.isolation === 1;
    const aborted = committedOnly
      ? [...(part.abortedTransactions ?? [])].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1))
      : [];
    const abortedProducers = new Set<bigint>();
    const messages: FetchedMessage[] = [];
    const start = BigInt(from);
    let next: number | null = null;
    for (const batch of part.records ?? []) {
      const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
      next = Number(last) + 1;
      while (aborted.length > 0 && aborted[0]!.firstOffset <= last)
        abortedProducers.add(aborted.shift()!.producerId);
      if ((batch.attributes & CONTROL) !== 0) {
        // A control record's key is (version int16, type int16); type 0 is an abort.
        if (batch.records[0]?.key?.readInt16BE(2) === 0) abortedProducers.delete(batch.producerId);
        continue;
      }
      if ((batch.attributes & TRANSACTIONAL) !== 0 && abortedProducers.has(batch.producerId)) continue;
      const logAppend = (batch.attributes & LOG_APPEND_TIME) !== 0;
      for (const r of batch.records) {
        const offset = batch.firstOffset + BigInt(r.offsetDelta);
        if (offset < start) continue;
        let headers: Record<string, Buffer | Buffer[]> | undefined;
        for (const [name, value] of r.headers) {
          if (name === null || value === null) continue;
          headers ??= {};
          const key = name.toString('utf8');
          const had = headers[key];
          headers[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
        }
        messages.push({
          offset: String(offset),
          timestamp: String(logAppend ? batch.maxTimestamp : batch.firstTimestamp + r.timestampDelta),
          key: r.key,
          value: r.value,
          headers,
        });
      }
    }
    return {
      topic,
      partition: part.partitionIndex,
      highWatermark: Number(part.highWatermark),
      lastStableOffset: Number(part.lastStableOffset ?? -1n),
      messages,
      next,
    };
  }

  /** The topics' metadata (asked again with `force`), with their ids noted. */
  private async metadata(force: boolean) {
    const md = await this.client().metadata({ topics: this.topics, forceUpdate: force });
    for (const [name, t] of md.topics) {
      if (t.id === NO_TOPIC_ID) continue;
      this.ids.set(name, t.id);
      this.names.set(t.id, name);
    }
    return md;
  }

  private client(): Consumer {
    if (this.main === null) throw new ReadFailure('other', new Error('the Kafka reader is not connected'));
    return this.main;
  }

  private fetcher(target: string, topic: string | null): Consumer {
    let f = this.fetchers.get(target);
    if (f === undefined) {
      f = this.consumer(topic === null ? this.topics : [topic]);
      this.fetchers.set(target, f);
    }
    return f;
  }

  private consumer(topics: readonly string[]): Consumer {
    const consumer = new this.library!.Consumer({
      ...this.settings,
      bootstrapBrokers: [...this.options.brokers],
      // Never joined: the offsets to read come from the checkpoint, not from a group.
      groupId: `${this.settings.clientId}-reader`,
      retries: 0,
      autocreateTopics: false,
    });
    if (topics.length > 0) consumer.topics.trackAll(...topics);
    return consumer;
  }

  private adminClient(): Promise<Admin> {
    this.admin ??= (async () => {
      this.library ??= await import('@platformatic/kafka');
      return new this.library.Admin({
        ...this.settings,
        bootstrapBrokers: [...this.options.brokers],
        retries: 0,
      });
    })();
    return this.admin;
  }
}

/**
 * The source's kafkajs-style client settings as `@platformatic/kafka` takes them: `clientId`,
 * `connectionTimeout`, `requestTimeout`, `ssl` and `sasl` (PLAIN, SCRAM) carry over; kafkajs'
 * `retry` and logging do not apply (the source retries by itself); a `socketFactory` or another
 * SASL mechanism is refused.
 */
export function platformaticSettings(
  what: string,
  client: KafkaClientSettings | undefined,
): ConnectionOptions & { clientId: string } {
  const out: ConnectionOptions & { clientId: string } = { clientId: client?.clientId ?? 'millrace' };
  if (client === undefined) return out;
  if (client.socketFactory !== undefined) {
    throw invalidArgument(
      `${what}: client.socketFactory is a kafkajs setting; library '@platformatic/kafka' cannot use it`,
    );
  }
  if (client.connectionTimeout !== undefined) out.connectTimeout = client.connectionTimeout;
  if (client.requestTimeout !== undefined) out.requestTimeout = client.requestTimeout;
  if (client.ssl === true) out.tls = {};
  else if (typeof client.ssl === 'object' && client.ssl !== null) out.tls = client.ssl;
  const sasl = client.sasl as { mechanism?: string; username?: string; password?: string } | undefined;
  if (sasl !== undefined) {
    const mechanism = String(sasl.mechanism).toUpperCase();
    if (mechanism !== 'PLAIN' && mechanism !== 'SCRAM-SHA-256' && mechanism !== 'SCRAM-SHA-512') {
      throw invalidArgument(
        `${what}: client.sasl.mechanism ${JSON.stringify(sasl.mechanism)} is not supported with library '@platformatic/kafka' (plain, scram-sha-256, scram-sha-512)`,
      );
    }
    out.sasl = { mechanism, username: sasl.username, password: sasl.password } as SASLOptions;
  }
  return out;
}

/** A `@platformatic/kafka` error as a {@link ReadFailure}; `topicOf` names a fetch response's topic ids. */
function classify(e: unknown, topicOf: (id: string) => string = (id) => id): ReadFailure {
  if (e instanceof ReadFailure) return e;
  const err = e as { errors?: unknown[]; response?: FetchResponse; apiId?: string };
  const codes = protocolErrors(err);
  if (codes.has('OFFSET_OUT_OF_RANGE')) {
    for (const t of findResponse(err)?.responses ?? []) {
      const hit = t.partitions?.find((p: FetchedPartitionData) => p.errorCode === 1);
      if (hit !== undefined) {
        return new ReadFailure('out-of-range', e, {
          topic: topicOf(t.topicId),
          partition: hit.partitionIndex,
        });
      }
    }
  }
  if (codes.has('UNKNOWN_TOPIC_OR_PARTITION') || codes.has('UNKNOWN_TOPIC_ID'))
    return new ReadFailure('unknown-topic', e);
  return new ReadFailure('other', e);
}

/** The protocol error ids in an error and the errors it holds. */
function protocolErrors(e: unknown, out = new Set<string>(), depth = 0): Set<string> {
  const err = e as { apiId?: unknown; errors?: unknown[]; cause?: unknown } | null;
  if (err === null || typeof err !== 'object' || depth > 4) return out;
  if (typeof err.apiId === 'string') out.add(err.apiId);
  for (const inner of err.errors ?? []) protocolErrors(inner, out, depth + 1);
  if (err.cause !== undefined) protocolErrors(err.cause, out, depth + 1);
  return out;
}

function findResponse(e: unknown, depth = 0): FetchResponse | undefined {
  const err = e as { response?: FetchResponse; errors?: unknown[]; cause?: unknown } | null;
  if (err === null || typeof err !== 'object' || depth > 4) return undefined;
  if (Array.isArray(err.response?.responses)) return err.response;
  for (const inner of err.errors ?? []) {
    const r = findResponse(inner, depth + 1);
    if (r !== undefined) return r;
  }
  return err.cause === undefined ? undefined : findResponse(err.cause, depth + 1);
}
