import type { LatencyKind, LatencyQuantiles } from './latency.js';

/** Progress of one source in one interval (Spark's SourceProgress). Offsets are `{ partition: offset }`. */
export interface SourceProgress {
  description: string;
  startOffset: Record<string, number>;
  endOffset: Record<string, number>;
  latestOffset: Record<string, number> | null;
  numInputRows: number;
  inputRowsPerSecond: number;
  processedRowsPerSecond: number;
  /** Source-specific counters, e.g. a Kafka source's `offsetsLost` (skipped under `failOnDataLoss: false`). */
  metrics?: Record<string, number>;
}

export interface SinkProgress {
  description: string;
  numOutputRows: number;
}

/** Spark's StateOperatorProgress (filled by stateful operators). */
export interface StateOperatorProgress {
  operatorName: string;
  numRowsTotal: number;
  numRowsUpdated: number;
  numRowsRemoved: number;
  numRowsDroppedByWatermark: number;
  memoryUsedBytes: number;
  commitTimeMs: number;
  customMetrics: Record<string, number>;
}

/**
 * One progress report, with Spark's field names (StreamingQueryProgress). In real-time mode one is
 * made every progress interval; `batchId` is the epoch in progress.
 */
export interface StreamingQueryProgress {
  id: string;
  runId: string;
  name: string | null;
  /** ISO-8601, by the query's clock. */
  timestamp: string;
  batchId: number;
  /** Length of the interval this report covers (ms). */
  batchDuration: number;
  numInputRows: number;
  inputRowsPerSecond: number;
  processedRowsPerSecond: number;
  durationMs: {
    /** The interval covered. */
    triggerExecution: number;
    /** Time spent collecting the workers' reports. */
    reportLatency: number;
    /** Time tasks spent waiting for space in full rings (summed over tasks). */
    backpressure: number;
  };
  eventTime: Record<string, string>;
  stateOperators: StateOperatorProgress[];
  sources: SourceProgress[];
  sink: SinkProgress;
  /** Latency percentiles in this interval, in ms. */
  latencyMs: Record<LatencyKind, LatencyQuantiles>;
  /** Rows user code threw on, in this interval. */
  badRecords: { skipped: number; deadLettered: number };
}

/** What committing one epoch took on the driver (`epochCommitted`'s second argument). */
export interface EpochCommit {
  readonly epoch: number;
  /** When it was committed (ms, the query's clock). */
  readonly committedAt: number;
  /**
   * How long the driver took, from the moment the epoch was complete (every task had reported and
   * its state was durable) until it was committed: the offset log, the sink's commit, the commit log.
   */
  readonly durationMs: number;
  /** Bytes of offset and commit log files written since the previous commit (0 without a checkpoint). */
  readonly logBytes: number;
}
