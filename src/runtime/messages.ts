import type { MessagePort } from 'node:worker_threads';
import type { ResolvedLayouts } from '../connectors/layouts.js';
import type { SerializedError } from '../errors.js';
import type { EncodedLatency } from '../metrics/latency.js';
import type { StateOperatorCounters } from '../operators/contract.js';
import type { EventTimeStats } from '../operators/watermark.js';
import type { PhysicalSettings } from '../plan/physical.js';
import type { BadRecordPolicy, LateRowPolicy } from '../plan/query-options.js';
import type { PlanCut } from './group/cut-plan.js';
import type { ClockSpec } from './time/clock.js';

/**
 * Typed messages between the driver and worker hosts. The driver starts each host with a HostSpec
 * (the Piscina task argument); hosts answer on their MessagePort with HostMessages.
 */

export interface TaskSpec {
  readonly index: number;
  readonly stage: number;
  readonly partition: number;
  /** Rings this task reads: the driver's feed ring for a source task, else one per upstream task. */
  readonly inputs: readonly SharedArrayBuffer[];
  /** Rings this task writes after a shuffle: one per partition of the next stage. */
  readonly outputs: readonly SharedArrayBuffer[];
  /** A source task: the offset its partition resumes at (0 on a fresh start). */
  readonly startOffset?: number;
  /**
   * A generated source task of a real-time run that redoes an epoch: where that epoch ends. The
   * task makes no row at or past it before the epoch's `BATCH` marker has come (it may come after
   * the task started), so the redo holds exactly the rows it held before.
   */
  readonly redoEnd?: number;
  /** Channels of the task's operators that run on UDF threads (see wiring.ts). */
  readonly udf?: readonly UdfChannelSpec[];
}

/** One task operator's channel to a UDF thread: requests out, answers back. */
export interface UdfChannelSpec {
  readonly operatorId: number;
  readonly request: SharedArrayBuffer;
  readonly response: SharedArrayBuffer;
}

/** What a UDF thread of the UDF pool is told at start (its port is added when it is launched). */
export interface UdfWorkerSpec {
  readonly workerIndex: number;
  /** This UDF thread's doorbell in `bells`. */
  readonly bell: number;
  readonly jobUrl: string;
  readonly params: Readonly<Record<string, string>>;
  readonly layouts: ResolvedLayouts;
  /** The half of the plan a group task runs, or null (see `group/cut-plan.ts`). */
  readonly cut: PlanCut | null;
  readonly fingerprint: string;
  readonly bells: SharedArrayBuffer;
  /** Int32 slot 0 set to 1 by the driver: the query is over, the thread ends. */
  readonly control: SharedArrayBuffer;
  readonly spinMicros: number;
  /** How long the thread spins after an answer before it parks, at least (see host-specs.ts). */
  readonly answeredSpinMicros: number;
  /** The channels it serves: task and operator, and the two rings. */
  readonly channels: readonly (UdfChannelSpec & { readonly task: number })[];
  readonly port: MessagePort;
}

/** What a UDF thread tells the driver. */
export type UdfWorkerMessage =
  | {
      readonly type: 'ready';
      readonly workerIndex: number;
      /** The thread it runs on (the driver ends it when the thread fails). */
      readonly threadId: number;
    }
  | { readonly type: 'failed'; readonly workerIndex: number; readonly error: SerializedError };

/** How stateful tasks keep their state in the checkpoint. */
export interface StateCheckpointSpec {
  /** The checkpoint directory. */
  readonly root: string;
  /** The state version to restore before the first row (0: none — a fresh start). */
  readonly restoreVersion: number;
  /** A full snapshot every this many versions; changelogs in between. */
  readonly minDeltasForSnapshot: number;
  /**
   * Plan operator id → the id its state is kept under in the checkpoint, where they differ (the
   * plan changed upstream of a stateful operator since the checkpoint was created; see
   * docs/operations.md, "What may change between runs").
   */
  readonly stateIds?: Readonly<Record<number, number>>;
}

export interface HostSpec {
  readonly queryId: string;
  /** The group task the query runs (see RuntimeConfig.task), or null. */
  readonly task: string | null;
  readonly runId: string;
  readonly hostIndex: number;
  /** This host's doorbell in `bells`. */
  readonly bell: number;
  readonly jobUrl: string;
  readonly params: Readonly<Record<string, string>>;
  /** Source layouts (partitions) as the driver resolved them at start; the job is built with them. */
  readonly layouts: ResolvedLayouts;
  /** The half of the plan a group task runs, or null (see `group/cut-plan.ts`). */
  readonly cut: PlanCut | null;
  /** The plan fingerprint (with code) the driver built; the host must build the same. */
  readonly fingerprint: string;
  readonly physical: PhysicalSettings;
  readonly bells: SharedArrayBuffer;
  readonly control: SharedArrayBuffer;
  readonly clock: ClockSpec;
  readonly tasks: readonly TaskSpec[];
  /** Host → driver: sink rows for driver-side sinks, markers acknowledged by sink tasks, dead letters. */
  readonly resultRing: SharedArrayBuffer;
  readonly port: MessagePort;
  /** Micro-batch execution: sources read up to the driver's BATCH markers, stateful tasks emit at batch ends. */
  readonly microBatch: boolean;
  /** Each watermark input's value to start from (a resumed run; −Infinity otherwise). */
  readonly watermarks: readonly number[];
  /**
   * Micro-batch mode, a resumed run: the watermark the last committed batch ran with, by which the
   * next batch judges late rows (−Infinity otherwise).
   */
  readonly lateWatermark: number;
  /** Each generated source's schedule origin from an earlier run (null: the query's start). */
  readonly scheduleStarts: readonly (number | null)[];
  /** The first epoch of this run (after a resume, the one after the last committed). */
  readonly firstEpoch: number;
  /** Where stateful tasks checkpoint their state, and the version to restore (null: no checkpoint). */
  readonly state: StateCheckpointSpec | null;
  readonly onBadRecord: BadRecordPolicy;
  readonly onLateRow: LateRowPolicy;
  readonly multipleWatermarkPolicy: 'min' | 'max';
  readonly spinMicros: number;
  /** How long the host spins for a UDF thread's answer it awaits (see answeredSpinMicros). */
  readonly udfAnswerSpinMicros: number;
  /** The query's `arrowMaxRecordsPerBatch` (undefined: the mode's default). */
  readonly arrowMaxRecordsPerBatch: number | undefined;
  /** The query's `stateMemoryLimitBytes` (undefined: a share of the worker's heap limit). */
  readonly stateMemoryLimitBytes: number | undefined;
}

/** Counters of one task since the query started (the driver takes differences). */
export interface TaskCounters {
  readonly index: number;
  /** Rows read by a source task (its input rows). */
  readonly sourceRows: number;
  /** Rows this task received from its inputs (or generated). */
  readonly rowsIn: number;
  /** Rows a sink task emitted. */
  readonly rowsOut: number;
  readonly skipped: number;
  readonly deadLettered: number;
  /** Next offset of a source task's partition (rows read so far). */
  readonly sourceOffset: number;
  /** Latest available offset of a source task's partition, when the source knows it. */
  readonly latestOffset: number;
  /** The epoch the task is in (barriers it passed). */
  readonly epoch: number;
  /** The watermark in force at the task's stateful operator (−Infinity before any). */
  readonly watermark: number;
  /** The task's stateful operator's counters, if it has one. */
  readonly state: StateOperatorCounters | null;
  /** Event times its watermark operators saw since the last report. */
  readonly eventTime: EventTimeStats | null;
  /** Milliseconds spent waiting for space in an output ring. */
  readonly backpressureMs: number;
  /**
   * A task that runs a watermark operator: its own partition's watermark (largest event time it
   * saw − delay; −Infinity before any) and whether the partition has input it has not read yet.
   */
  readonly partitionWatermark: { readonly value: number; readonly behind: boolean } | null;
}

export type HostMessage =
  | {
      readonly type: 'ready';
      readonly hostIndex: number;
      /** The thread the host runs on (the driver ends it when the run does not end cleanly). */
      readonly threadId: number;
    }
  | {
      readonly type: 'report';
      readonly hostIndex: number;
      /** The REPORT_GEN it answers; -1 for the final report when the host ends. */
      readonly gen: number;
      /**
       * On the final report: every task ran to its end (no failure, no abort), and the thread goes
       * back to the process's reserve for the next query.
       */
      readonly clean?: boolean;
      readonly tasks: readonly TaskCounters[];
      readonly latency: EncodedLatency;
    }
  | { readonly type: 'failed'; readonly hostIndex: number; readonly error: SerializedError }
  | {
      readonly type: 'sinkCommitted';
      readonly hostIndex: number;
      readonly epoch: number;
      /** Set when a sink partition of the host could not commit the epoch. */
      readonly error?: SerializedError;
    };

/**
 * What the driver tells a host. `commitSink`: epoch `epoch` is logged (its offsets are durable);
 * sinks that commit in the worker (transactions held open per epoch) commit it now and
 * the host answers `sinkCommitted`.
 */
export type DriverMessage = { readonly type: 'commitSink'; readonly epoch: number };

export type { DeadLetter, LateRow } from '../connectors/side-output/side-records.js';

/** What a stateful task tells the driver at the end of a batch or epoch (a `STATE_REPORT` frame). */
export interface StateReport {
  readonly epoch: number;
  readonly partition: number;
  /** The watermark the next batch will use (−Infinity: none yet). */
  readonly watermark: number;
  /** What the task had heard of each watermark input (−Infinity: nothing). */
  readonly inputs: readonly number[];
  /** The earliest watermark at which the task's state would emit or evict (Infinity: never). */
  readonly nextDue: number;
  /** The earliest processing time at which a timer of the task falls due (Infinity: none). */
  readonly nextTimerDue?: number;
}
