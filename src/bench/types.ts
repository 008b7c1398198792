import type { Histogram } from 'hdr-histogram-js';
import type { LatencySummary } from '../metrics/latency.js';

/**
 * Where a benchmark writes its progress lines as it runs (standard error on the command line); the
 * result itself is returned, for the caller to print. Tests pass one that keeps the text.
 */
export interface BenchIO {
  err(text: string): void;
}

/** Options every latency scenario takes (`--rate`, `--duration`, `--find-max`, `--out`…). */
export interface CommonOptions {
  rates: number[];
  durationMs: number;
  warmupMs: number;
  runs: number;
  findMax: boolean;
  maxTimeMs: number;
  spinMicros: number | undefined;
  outDir: string;
  json: boolean;
}

/** The systems a scenario compares: Millrace, and the `postMessage` worker pipeline. */
export const SYSTEMS = ['millrace', 'postmessage'] as const;
export type SystemName = (typeof SYSTEMS)[number];

export const SYSTEM_LABEL: Record<SystemName, string> = {
  millrace: 'Millrace',
  postmessage: 'postMessage',
};

/** The load and the timing of one measured run, whatever the scenario. */
export interface RunWindow {
  /** Rows per second, constant. */
  rate: number;
  /** Run time before the measured window (JIT warm-up, worker start); not measured. */
  warmupMs: number;
  /** Length of the measured window. */
  durationMs: number;
  signal: AbortSignal;
}

/** How one system of the stateless scenario is driven for one measured run. */
export interface RunSettings extends RunWindow {
  /** Millrace's `spinMicros` (undefined: the engine's default). */
  spinMicros: number | undefined;
  /**
   * Millrace without the thread hop: generator, filter, map and sink fused into one task per
   * partition, over `partitions` generator partitions (the plan a stateless query runs as).
   */
  fused: boolean;
  partitions: number;
}

/** Rows due but not yet emitted at the sink, sampled about once a second in the window. */
export interface BacklogStats {
  /** The last sample (null: none was taken, the window was shorter than a sample interval). */
  final: number | null;
  max: number | null;
  samples: number[];
  /** Rows due in the window minus rows emitted in it: how much the backlog grew. */
  growth: number;
}

/**
 * State of a query's stateful operator over the measured window, from its progress reports
 * (`stateOperators[0]`, summed over partitions by the engine).
 */
export interface StateStats {
  /** Groups held at the last report of the window (`numRowsTotal`). */
  rows: number;
  /** Most groups held at any report of the window. */
  maxRows: number;
  /** The engine's estimate of the state's memory at the last report (`memoryUsedBytes`). */
  memoryBytes: number;
  maxMemoryBytes: number;
  /** Rows dropped behind the watermark in the window (`numRowsDroppedByWatermark`). */
  droppedLate: number;
  /** Groups evicted in the window (`numRowsRemoved`). */
  removed: number;
}

/** One measured run of one system at one rate (JSON-friendly). */
export interface SystemRun {
  system: SystemName;
  rate: number;
  /** The measured window as timed by the main thread (ms). */
  windowMs: number;
  /** e2e latency (emit − scheduled time) in ms, and the number of rows recorded. */
  latency: LatencySummary;
  /** Rows emitted per second in the window. */
  throughput: number;
  backlog: BacklogStats;
  sustainable: boolean;
  /** Why not, when not sustainable. */
  reasons: string[];
  /**
   * How far the engine's latency clock on the sink thread is ahead of the one on the source thread
   * (ms): every e2e figure of the run is off by this much (see clock-probe.ts). Null for the
   * baseline, which reads one clock in both threads, or when it was not reported.
   */
  clockSkewMs: number | null;
  /** CPU used by other processes just before the run, in % of all CPUs (see foreignCpuLoad). */
  foreignCpuPercent: number;
  /** The stateful operator's state, for a query that has one. */
  state?: StateStats;
  /**
   * For a query whose sources and sinks run on several threads: the largest difference between the
   * latency clocks of the threads that reported (ms), the bound on how far any e2e figure is off.
   */
  clockSpreadMs?: number | null;
}

/** The e2e histogram (µs) of one progress interval, and when it began and ended (ms since the epoch). */
export interface IntervalHistogram {
  startMs: number;
  endMs: number;
  histogram: Histogram;
}

/** A run and its e2e histogram (µs), kept in memory for files and plots. */
export interface MeasuredRun {
  run: Omit<SystemRun, 'foreignCpuPercent'>;
  histogram: Histogram;
  /** The measured window's progress intervals, for latency over time (the engine's runs). */
  intervals?: IntervalHistogram[];
}
