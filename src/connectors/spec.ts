/**
 * What a job declares about its sources and sinks. Specs are plain frozen data plus user functions;
 * the same spec object is rebuilt in every thread by the job module, so functions in it simply work.
 */

import type { OutputMode } from '../api/output-mode.js';

export type SourceKind = 'memory' | 'rate' | 'generator' | 'files';

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

export type SourceSpec<T = any> = MemorySourceSpec<T> | GeneratorSourceSpec<T> | FilesSourceSpec<T>;

export type SinkKind = 'memory' | 'console' | 'foreach' | 'foreachBatch' | 'files';

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

export type SinkSpec =
  | MemorySinkSpec
  | ConsoleSinkSpec
  | ForeachSinkSpec
  | ForeachBatchSinkSpec
  | FilesSinkSpec;

export const NAME_PATTERN = /^[a-zA-Z0-9_]+$/;
