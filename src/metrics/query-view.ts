import type { EpochCommit, StreamingQueryProgress } from './progress.js';

/**
 * What the metrics and the console read of a running query (a StreamingQuery): its events, its
 * status and, for the console, its plan and recent history.
 */
export interface MeteredQuery {
  readonly id: string;
  readonly name: string | null;
  readonly status: { readonly state: string };
  on(event: 'progress', listener: (p: StreamingQueryProgress) => void): unknown;
  on(event: 'epochCommitted', listener: (epoch: number, commit: EpochCommit) => void): unknown;
  on(event: 'restarting' | 'started' | 'terminated', listener: () => void): unknown;
  /** Per task: its fullest input ring now (0 to 1), its backpressure and rows this run. */
  taskGauges?(): readonly TaskGauge[];
  readonly runId?: string;
  readonly exception?: { readonly code: string; readonly message: string } | null;
  readonly recentProgress?: readonly StreamingQueryProgress[];
  readonly recentCommits?: readonly EpochCommit[];
  topology?(): QueryTopology;
}

export interface TaskGauge {
  /** The task's global index, and the worker thread it runs on. */
  readonly task: number;
  readonly stage: number;
  readonly partition: number;
  /** How full the task's fullest input ring is now, 0 to 1. */
  readonly inputFill: number;
  /** Time the task waited for room in full output rings, this run (ms, cumulative). */
  readonly backpressureMs: number;
  readonly worker: number;
  /** Rows the task received (or read) and emitted, this run. */
  readonly rowsIn: number;
  readonly rowsOut: number;
}

/** The physical plan as data: what the console draws. */
export interface QueryTopology {
  /** Worker threads that run the tasks, and the threads that run Arrow UDFs. */
  readonly workers: number;
  readonly udfWorkers: number;
  readonly stages: readonly TopologyStage[];
  readonly tasks: readonly { task: number; stage: number; partition: number; worker: number }[];
}

export interface TopologyStage {
  readonly id: number;
  readonly partitions: number;
  /** The operators fused into the stage, in order (`kind#id 'label'`). */
  readonly operators: readonly string[];
  /** Where its rows come from, and how many rings carry them. */
  readonly inputs: readonly (
    | { kind: 'source'; description: string; rings: number }
    | { kind: 'shuffle'; fromStage: number; rings: number }
  )[];
  readonly output:
    | { kind: 'shuffle'; toStage: number; key: string; partitioning: 'hash' | 'forward' }
    | { kind: 'sink'; description: string; outputMode: string };
}
