import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaClientSettings } from '../../plan/kafka-settings.js';
import type { FetchedMessage } from './client.js';
import type { KafkaLibrary } from './types.js';

/** A topic-partition, as Kafka names it. */
export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** One partition of a fetch: read from `offset`, at most `maxBytes`. */
export interface ReadRequest extends PartitionRef {
  readonly offset: number;
  readonly maxBytes: number;
}

/**
 * A fetched partition, the same whichever library read it: its records from the offset asked
 * for, without transaction markers and (under `read_committed`) without rows of aborted
 * transactions.
 */
export interface ReadPartition extends PartitionRef {
  readonly highWatermark: number;
  /** Under `read_committed`: the last stable offset (−1 when the broker gave none). */
  readonly lastStableOffset: number;
  readonly messages: readonly FetchedMessage[];
  /**
   * The offset after the last record the fetch came back with, markers and filtered rows
   * included; null when it came back with none.
   */
  readonly next: number | null;
}

/** What a failed request says about the data, as the source acts on it. */
export type ReadFailureKind =
  /** The offset asked for is outside the partition's log (retention, a recreated topic). */
  | 'out-of-range'
  /** A topic or partition the brokers do not have (a deleted topic). */
  | 'unknown-topic'
  /** Anything else (a broker down, a leader moved, a timeout): worth a retry. */
  | 'other';

export class ReadFailure extends Error {
  constructor(
    readonly kind: ReadFailureKind,
    override readonly cause: unknown,
    /** The partition, for `out-of-range`. */
    readonly at?: PartitionRef,
  ) {
    super((cause as Error)?.message ?? String(cause), { cause });
    this.name = 'ReadFailure';
  }
}

/**
 * How a Kafka source talks to the brokers, whichever client library does it: metadata, fetches
 * from exact offsets, offset listing, and offset commits for a monitoring group. Requests fail
 * with {@link ReadFailure}.
 */
export interface KafkaReader {
  /** Connects and learns the topics' metadata. */
  connect(topics: readonly string[]): Promise<void>;
  disconnect(): Promise<void>;
  /** Asks the brokers for metadata again (a leader moved, a broker came back). */
  refreshMetadata(): Promise<void>;
  /** A deleted topic: its metadata is asked for no more. */
  forget(topic: string): void;
  /** Every topic the brokers have (internal ones left out) with its partitions, sorted. */
  topicPartitions(): Promise<Map<string, number[]>>;
  /**
   * The partitions grouped by where one fetch reads them (a leader broker), from the metadata
   * known now; each group is fetched by a loop of its own.
   */
  fetchTargets(partitions: readonly PartitionRef[]): Promise<Map<string, PartitionRef[]>>;
  /** One fetch from a target: a long poll answered as soon as a record arrives, or after `maxWaitMs`. */
  fetch(
    target: string,
    request: { maxWaitMs: number; maxBytes: number; partitions: readonly ReadRequest[] },
  ): Promise<ReadPartition[]>;
  /** The earliest or latest offsets (the last stable ones under `read_committed`), by `topic\0partition`. */
  listOffsets(partitions: readonly PartitionRef[], at: 'earliest' | 'latest'): Promise<Map<string, number>>;
  /** Commits offsets to a consumer group without joining it (generation −1). */
  commitOffsets(groupId: string, offsets: readonly (PartitionRef & { offset: number })[]): Promise<void>;
}

export interface ReaderOptions {
  readonly brokers: readonly string[];
  readonly client: KafkaClientSettings | undefined;
  readonly library: KafkaLibrary;
  readonly isolationLevel: 'read_committed' | 'read_uncommitted';
}

/** Partitions grouped by topic, each as `as` makes it, in the order given. */
export function byTopic<P extends PartitionRef, V>(
  parts: readonly P[],
  as: (part: P) => V,
): Map<string, V[]> {
  const out = new Map<string, V[]>();
  for (const part of parts) {
    const list = out.get(part.topic);
    if (list === undefined) out.set(part.topic, [as(part)]);
    else list.push(as(part));
  }
  return out;
}

/** The key of a topic-partition in {@link KafkaReader.listOffsets}' answer. */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/** Wraps a failure that is not a {@link ReadFailure} as one of kind `other`. */
export function asReadFailure(e: unknown): ReadFailure {
  return e instanceof ReadFailure ? e : new ReadFailure('other', e);
}

/** The coded error of a source whose brokers cannot be read. */
export function readFailed(description: string, brokers: readonly string[], what: string, cause: unknown) {
  const e = cause instanceof ReadFailure ? cause.cause : cause;
  return new MillraceError(
    ErrorCode.SOURCE_READ_FAILED,
    `${description}: ${what} (${brokers.join(',')}): ${(e as Error)?.message ?? String(e)}`,
    { cause: e },
  );
}
