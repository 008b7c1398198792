import type { RecordBatch } from 'apache-arrow';
import type { CheckpointedStore } from '../state/store-contract.js';

/**
 * The operator contract: one required method. An operator gets a row, does its work and pushes
 * zero or more rows to the next element of the chain (another operator, or the task's output).
 * Operators are created once per task, so per-row work allocates nothing the operator itself
 * does not need.
 */
export interface RowSink {
  push(row: unknown): void;
}

/** A static table's rows by join key (rows whose key is null are left out: they match nothing). */
export type StaticIndex = ReadonlyMap<string, readonly unknown[]>;

/** What identifies an operator in errors and dead letters. */
export interface OperatorRef {
  readonly id: number;
  readonly node: { readonly kind: string; readonly label: string | undefined };
}

/** What the task offers its operators. */
export interface OperatorContext {
  /**
   * User code threw on `row`: applies the query's bad-record policy. With `fail` it throws (the
   * task fails with the operator, partition and offending row's offset); otherwise the row is
   * skipped or dead-lettered, counted, and the operator carries on with the next row.
   */
  badRecord(op: OperatorRef, row: unknown, error: unknown, userCode?: boolean): void;
  /** The event-time watermark in force at this task's stateful operator (−Infinity before any). */
  watermark(): number;
  /**
   * The watermark rows are judged late by at this task's stateful operator: the one in force in
   * real-time mode, the previous batch's in micro-batch mode (Spark's rule for chains).
   */
  lateWatermark(): number;
  /** A watermark operator saw its input's watermark (max event time − delay) reach `value`. */
  advanceWatermark(input: number, value: number): void;
  /**
   * The task keeps its watermarks per source partition (real-time mode, a `withWatermark` over rows
   * straight from several source tasks): a watermark operator reports each row's event time −
   * delay with {@link advancePartitionWatermark} instead.
   */
  readonly watermarksPerPartition: boolean;
  /** The current row ({@link meta}) brings its source partition's watermark of `input` to `value`. */
  advancePartitionWatermark(input: number, value: number): void;
  /** A row reached a stateful operator at or below the watermark: counted by the operator, sent
   * to the late-row output when the query asks for one. */
  lateRow(op: OperatorRef, row: unknown): void;
  /** Processing time now (the query's clock: manual in tests). */
  processingTime(): number;
  /** The task's partition of its stage, and the stage's partition count. */
  readonly partition: number;
  readonly partitions: number;
  /** The static table of a stream–static join, loaded and indexed when the worker started. */
  staticTable(operatorId: number): StaticIndex;
  /**
   * The row being processed: where it came from and when. An operator that holds rows saves it
   * with each and sets it back before it lets the row go on (see {@link HoldingOperator}).
   */
  readonly meta: RowMetaFields;
  /** Where operator `operatorId`'s Arrow batches run: a UDF thread's channel, or this thread. */
  udfChannel(operatorId: number): BatchChannel | DirectBatchChannel;
  /** The task's output cannot take more rows now: an operator letting rows go stops. */
  outputBlocked(): boolean;
  /** Execution in micro-batches (the trigger is not real-time). */
  readonly microBatch: boolean;
  /** The query's `arrowMaxRecordsPerBatch` (undefined: the mode's default). */
  readonly arrowMaxRecordsPerBatch: number | undefined;
}

/** What a task knows of the row it processes. */
export interface RowMetaFields {
  sourceTime: number;
  readTime: number;
  origin: number;
  sourceIndex: number;
  sourcePartition: number;
}

/**
 * A batch's columns as JS values the operator owns (nothing a user function keeps or reuses is
 * shared with them): an answer made on the task's own thread.
 */
export interface AnsweredColumns {
  readonly length: number;
  readonly names: readonly string[];
  readonly columns: readonly ArrayLike<unknown>[];
}

/**
 * One answer to a batch: the IPC messages of its batches (from a UDF thread), its batches' columns
 * (made on the task's thread), or the error the function was answered with.
 */
export type BatchResponse =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: true; readonly answered: readonly AnsweredColumns[] }
  | { readonly ok: false; readonly error: Error };

/** A task operator's requests to its UDF thread as Arrow IPC messages, and the responses, in order. */
export interface BatchChannel {
  readonly direct: false;
  /** The largest request one frame holds. */
  readonly maxRequestBytes: number;
  /** Sends one request made of `chunks` (`bytes` in all); false when the ring has no room now. */
  send(chunks: readonly Uint8Array[], bytes: number): boolean;
  /** The next response, or null when none has arrived yet. */
  receive(): BatchResponse | null;
  /** Whether a response waits (cheap). */
  hasResponse(): boolean;
}

/**
 * A task operator's function run on the task's own thread: each batch is answered as it is given,
 * with no bytes between (no IPC encoding where no thread is crossed). Answers wait, in order,
 * until the operator takes them.
 */
export interface DirectBatchChannel {
  readonly direct: true;
  /** Runs the function on `batch`; its answer waits behind the earlier ones. */
  call(batch: RecordBatch): void;
  receive(): BatchResponse | null;
  hasResponse(): boolean;
}

/**
 * An operator that holds rows across pushes: it sends them to a UDF thread in batches (Arrow
 * UDFs) or lets them go at a trigger's end (mapPartitions). The task reads no input while one is
 * {@link full}, and lets no marker pass one that is {@link holds | holding} rows (a marker must
 * follow the rows before it), so order and exactly-once hold as for any chain.
 */
export interface HoldingOperator extends RowSink {
  readonly holding: true;
  /** Rows are held before a marker: `batchEnd` for a barrier, batch or stream end, else others. */
  holds(batchEnd: boolean): boolean;
  /** The task should read no more input until {@link advance} makes room. */
  full(): boolean;
  /** Takes what arrived (a response) and lets rows go on while the output takes them; true if it did anything. */
  advance(): boolean;
  /**
   * No more input waits now (or a marker waits for the held rows): sends a batch if none is in
   * flight. `batchEnd`: the trigger's batch ends; mapPartitions lets its rows go.
   */
  close(batchEnd: boolean): void;
  /** A response waits to be taken (the host asks before it parks). */
  ready(): boolean;
  /** A batch is with the UDF thread and its answer not back yet (the host spins for it). */
  awaiting(): boolean;
}

export function isHolding(op: RowSink): op is HoldingOperator {
  return (op as Partial<HoldingOperator>).holding === true;
}

/** Counters a stateful operator reports (cumulative; progress takes differences). */
export interface StateOperatorCounters {
  operatorId: number;
  operatorName: string;
  numRowsTotal: number;
  numRowsUpdated: number;
  numRowsRemoved: number;
  numRowsDroppedByWatermark: number;
  memoryUsedBytes: number;
  /** Key groups a lazy restore has not loaded yet (set by the task from the store). */
  keyGroupsToLoad?: number;
  /** Time spent writing the operator's checkpoints (ms; set by the task from its checkpointer). */
  commitTimeMs?: number;
  /** Bytes of the operator's checkpoint files written (set by the task from its checkpointer). */
  checkpointBytes?: number;
  /** Deduplication: rows dropped as duplicates of a key it holds (Spark's custom metric). */
  numDroppedDuplicateRows?: number;
}

/**
 * A stateful operator heads its stage (a shuffle by its keys comes before it). Besides rows it
 * hears about the watermark, in stream order: when the watermark in force advances, it emits what
 * that closes and evicts state behind it.
 */
export interface StatefulOperator extends RowSink {
  readonly stateful: true;
  /** Real-time mode: the watermark in force advanced. */
  onWatermark(watermark: number): void;
  /** Micro-batch mode: the batch ended; emit what the output mode says, evict behind `watermark`. */
  finishBatch(watermark: number): void;
  /** The smallest watermark at which state would emit or evict (Infinity: none). */
  nextDue(): number;
  stateCounters(): StateOperatorCounters;
  /** Where the operator keeps its state (the task checkpoints and restores it). */
  readonly store: CheckpointedStore;
  /**
   * Set when the operator can take its state lazily (real-time mode): the restore returns before
   * any entry is loaded and the store loads a key group when one of its keys is first used, the
   * rest in the background (InMemoryStateStore.restoreGroups). Unset: every entry is loaded before
   * {@link restored}.
   */
  readonly restoresLazily?: boolean;
  /**
   * The store was restored from a checkpoint: rebuild what the operator derives from it (or hear
   * its entries as they load, when it restores lazily).
   */
  restored(): void;
  /** The task starts, its state restored (or not: a first run); changes are tracked from here. */
  start?(): void;
  /** Real-time mode: the processing time at which an idle tick has work (Infinity: never). */
  nextTimerDue?(): number;
  /** Micro-batch mode: the earliest processing time at which a batch without data has work. */
  processingTimerDue?(): number;
  /** Real-time mode: an idle tick at processing time `now`. */
  tick?(now: number): void;
  /** Real-time mode: every input ended; the last rows may go out. */
  finish?(): void;
  /** The epoch ends and the state is about to be checkpointed. */
  beforeCheckpoint?(): void;
}

export function isStateful(op: RowSink): op is StatefulOperator {
  return (op as Partial<StatefulOperator>).stateful === true;
}

/**
 * A stateful operator with two inputs (a stream–stream join): the rows of the stage's input `i`
 * go to `inputs[i]` instead of `push`.
 */
export interface TwoInputOperator extends StatefulOperator {
  readonly inputs: readonly [RowSink, RowSink];
}

export function hasTwoInputs(op: StatefulOperator): op is TwoInputOperator {
  return (op as Partial<TwoInputOperator>).inputs !== undefined;
}
