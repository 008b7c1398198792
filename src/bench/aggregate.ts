import type { LatencySummary } from '../metrics/latency.js';
import { median } from './format.js';
import type { SystemRun } from './types.js';

/** Medians (and extremes) over the runs of one system at one rate. */
export interface SystemAggregate {
  median: LatencySummary;
  min: LatencySummary;
  max: LatencySummary;
  throughput: number;
  finalBacklog: number | null;
  /** Median clock skew of the runs (see SystemRun.clockSkewMs). */
  clockSkewMs: number | null;
  /**
   * Medians of the runs' percentiles corrected for their clock skew (value − skew), or null when
   * no skew was measured. A value that was recorded as 0 may have been negative (the engine
   * clamps): its correction is an upper bound.
   */
  corrected: LatencySummary | null;
  /** Every run was sustainable. */
  sustainable: boolean;
  runs: SystemRun[];
}

const LATENCY_KEYS = ['p50', 'p90', 'p99', 'p999', 'p9999', 'max', 'count', 'mean'] as const;

/** A percentile of a run without its clock skew (µs-rounded, never below 0). */
function correct(r: SystemRun, k: Exclude<(typeof LATENCY_KEYS)[number], 'count'>): number {
  return Math.max(0, Math.round((r.latency[k] - r.clockSkewMs!) * 1000) / 1000);
}

/** Above this, the clock skew between the engine's threads matters for µs-level targets. */
export const SKEW_WARNING_MS = 0.005;

/** Each figure of `summaries` folded by `f` (a median, a minimum…) into one summary. */
export function foldSummaries(
  summaries: readonly LatencySummary[],
  f: (values: number[]) => number,
): LatencySummary {
  const out = {} as LatencySummary;
  for (const k of LATENCY_KEYS) out[k] = f(summaries.map((s) => s[k]));
  return out;
}

export function aggregate(runs: SystemRun[]): SystemAggregate {
  const latencies = runs.map((r) => r.latency);
  const pick = (f: (values: number[]) => number) => foldSummaries(latencies, f);
  const backlogs = runs.map((r) => r.backlog.final).filter((b): b is number => b !== null);
  const skews = runs.map((r) => r.clockSkewMs).filter((s): s is number => s !== null);
  let corrected: LatencySummary | null = null;
  if (skews.length === runs.length && runs.length > 0) {
    corrected = {} as LatencySummary;
    for (const k of LATENCY_KEYS) {
      corrected[k] =
        k === 'count' ? median(runs.map((r) => r.latency.count)) : median(runs.map((r) => correct(r, k)));
    }
  }
  return {
    median: pick(median),
    min: pick((v) => Math.min(...v)),
    max: pick((v) => Math.max(...v)),
    throughput: median(runs.map((r) => r.throughput)),
    finalBacklog: backlogs.length > 0 ? median(backlogs) : null,
    clockSkewMs: skews.length > 0 ? median(skews) : null,
    corrected,
    sustainable: runs.every((r) => r.sustainable),
    runs,
  };
}
