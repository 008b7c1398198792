/**
 * What a job declares about its sources and sinks. Specs are plain frozen data plus user functions;
 * the same spec object is rebuilt in every thread by the job module, so functions in it simply work.
 */

import type { KafkaClientSettings } from '../plan/kafka-settings.js';
import type { OutputMode } from '../plan/output-mode.js';
import type {
  KafkaCodec,
  KafkaLibrary,
  KafkaPartitioner,
  KafkaSubscription,
  RawKafkaRecord,
  TopicPartition,
} from './kafka/types.js';

export type SourceKind = 'memory' | 'rate' | 'generator' | 'files' | 'kafka';

interface SourceSpecBase<T> {
  readonly kind: SourceKind;
  /** Type of the rows (compile time only). */
  readonly __row?: T;
  /** Stable name (`[a-zA-Z0-9_]+`), unique in the query. Memory sources always have one. */
  readonly name: string | undefined;
  /** Number of source partitions: the parallelism of the first stage. */
  readonly partitions: number;
  /** Shown in plans and in progress (`sources[].description`). */
  readonly description: string;
  /** Micro-batch mode: at most this many rows per batch, over all partitions (undefined: no limit). */
  readonly maxRowsPerTrigger: number | undefined;
}

/** Rows added from the test through `q.source(name).addData(rows, partition?)`. */
export interface MemorySourceSpec<T = unknown> extends SourceSpecBase<T> {
  readonly kind: 'memory';
  readonly name: string;
}

/**
 * Rows produced at a constant rate, row `i` of partition `p` scheduled at
 * `start + i / ratePerPartition` (after the ramp-up). Replayable: offsets are row numbers.
 */
export interface GeneratorSourceSpec<T = unknown> extends SourceSpecBase<T> {
  readonly kind: 'rate' | 'generator';
  readonly rowsPerSecond: number;
  readonly rampUpTimeMs: number;
  /** Deterministic: the same (partition, offset) always gives the same row. */
  readonly generate: (partition: number, offset: number, scheduledTimeMs: number) => T;
}

/**
 * Rows from the files of a directory, picked up in name order as they appear; or, when the
 * directory is a files sink's output (it has `_manifest/`), from the files its manifests commit.
 * Replayable: offsets count rows over the files in the order the checkpoint recorded them.
 */
export interface FilesSourceSpec<T = unknown> extends SourceSpecBase<T> {
  readonly kind: 'files';
  /** The directory (absolute). */
  readonly path: string;
  readonly format: 'json' | 'csv' | 'arrow';
  /** How often the directory is listed for new files, in milliseconds (real time). */
  readonly pollIntervalMs: number;
}

/** `'earliest'`, `'latest'`, or per topic and partition an offset (−2 earliest, −1 latest). */
export type KafkaStartingOffsets =
  | 'earliest'
  | 'latest'
  | Readonly<Record<string, Readonly<Record<string, number>>>>;

/**
 * Records from Kafka topics (see `sources.kafka`). The driver reads them from the brokers and
 * sends them, key and value still bytes, to the source tasks, which decode them with `decode`.
 */
export interface KafkaSourceSpec<T = unknown> extends SourceSpecBase<T> {
  readonly kind: 'kafka';
  readonly brokers: readonly string[];
  readonly subscription: KafkaSubscription;
  /** Source partition `i` reads `topicPartitions[i]`; undefined until the driver asked the brokers. */
  readonly topicPartitions: readonly TopicPartition[] | undefined;
  /** Identifies the subscription while the job is built (see `kafka/layout.ts`). */
  readonly layoutKey: string;
  readonly startingOffsets: KafkaStartingOffsets;
  readonly failOnDataLoss: boolean;
  readonly isolationLevel: 'read_committed' | 'read_uncommitted';
  readonly valueOnly: boolean;
  readonly groupId: string | undefined;
  readonly deadLetterTopic: string | undefined;
  readonly fetchMaxWaitMs: number;
  readonly fetchMaxBytes: number;
  readonly client: KafkaClientSettings | undefined;
  /** The client library the driver reads with (undefined: kafkajs). */
  readonly library?: KafkaLibrary;
  /** Turns a record read by the driver into the row (throws when key or value cannot be decoded). */
  readonly decode: (raw: RawKafkaRecord) => unknown;
  /**
   * A group's repartition source: records with the `millrace-watermark` header are watermarks of
   * `senders` upstream tasks, not rows; the watermark is the least of theirs, those silent
   * `idleMs` after the first record left out.
   */
  readonly watermarkRecords?: { readonly senders: number; readonly idleMs: number | undefined };
}

export type SourceSpec<T = any> =
  | MemorySourceSpec<T>
  | GeneratorSourceSpec<T>
  | FilesSourceSpec<T>
  | KafkaSourceSpec<T>;

export type SinkKind = 'memory' | 'console' | 'foreach' | 'foreachBatch' | 'files' | 'kafka';

interface SinkSpecBase {
  readonly kind: SinkKind;
  readonly description: string;
  readonly supportedModes: readonly OutputMode[];
}

/** Rows kept by the driver, readable from the test through `q.sink(name)`. */
export interface MemorySinkSpec extends SinkSpecBase {
  readonly kind: 'memory';
  readonly name: string;
}

/** Rows printed by the driver as they arrive. */
export interface ConsoleSinkSpec extends SinkSpecBase {
  readonly kind: 'console';
  readonly format: 'json' | 'pretty';
  /** Printed before each row (e.g. `'ALERT '`). */
  readonly prefix: string;
  /** Where to print; standard output by default. */
  readonly stream: 'stdout' | 'stderr';
}

/**
 * Spark's ForeachWriter: `open(partition, epochId)` when a partition starts an epoch (return false
 * to skip that epoch's rows, e.g. because they were written before), `process(row)` for each row,
 * `close(error)` when the epoch ends or the task stops. Runs in the worker thread that owns the
 * partition. `process` may return a promise: the partition waits for it before the next row.
 */
export interface ForeachWriter<T = any> {
  open?(partition: number, epochId: number): boolean | undefined | Promise<boolean | undefined>;
  process(row: T): unknown;
  close?(error: Error | null): unknown;
}

export interface ForeachSinkSpec extends SinkSpecBase {
  readonly kind: 'foreach';
  readonly writer: ForeachWriter;
}

/**
 * Rows written as files into a directory, one file per partition and epoch, committed by a manifest
 * (`_manifest/<epoch>`) written when the epoch commits: readers trust only the manifest.
 */
export interface FilesSinkSpec extends SinkSpecBase {
  readonly kind: 'files';
  /** The output directory (absolute). */
  readonly path: string;
  readonly format: 'json' | 'arrow';
}

/**
 * Spark's foreachBatch: `fn(batch, batchId)` with what one sink partition wrote in one epoch, as an
 * Arrow table, in the worker that owns the partition. In micro-batch mode an epoch is a batch.
 */
export interface ForeachBatchSinkSpec extends SinkSpecBase {
  readonly kind: 'foreachBatch';
  readonly fn: (batch: import('apache-arrow').Table, batchId: number) => unknown;
}

/** Rows to Kafka topics (see `sinks.kafka`); written by each sink partition's own producer. */
export interface KafkaSinkSpec extends SinkSpecBase {
  readonly kind: 'kafka';
  readonly brokers: readonly string[];
  readonly topic: string | undefined;
  readonly valueEncoding: KafkaCodec;
  readonly keyEncoding: KafkaCodec;
  readonly partitioner: 'default' | 'legacy' | KafkaPartitioner;
  readonly exactlyOnce: boolean;
  readonly idempotent: boolean;
  readonly transactionalIdPrefix: string | undefined;
  readonly transactionTimeoutMs: number;
  readonly compression: 'none' | 'gzip';
  /** A record's timestamp: when it was written (`'write'`), or its source row's time (`'source'`). */
  readonly timestamp: 'write' | 'source';
  readonly maxBufferedRows: number;
  readonly client: KafkaClientSettings | undefined;
  /**
   * A group's repartition sink (docs/scale-out.md, "Watermarks across processes"): at each epoch's
   * end, the task's watermark goes to every one of the topic's this many partitions, as a record
   * with the `millrace-watermark` header and no value. Absent for the sinks users make.
   */
  readonly watermarkPartitions?: number;
  /** The task's watermark input it passes on (see RepartitionStage.watermarkInput). */
  readonly watermarkInput?: number;
}

export type SinkSpec =
  | KafkaSinkSpec
  | MemorySinkSpec
  | ConsoleSinkSpec
  | ForeachSinkSpec
  | ForeachBatchSinkSpec
  | FilesSinkSpec;

export const NAME_PATTERN = /^[a-zA-Z0-9_]+$/;
