import { formatLatency } from './format.js';

/** docs/benchmarks.md: sustainable = backlog bounded and p99 under 10 ms for the whole run. */
export const SUSTAINABLE_P99_MS = 10;
/** A backlog (or its growth over the window) above this many seconds' worth of rows is not bounded. */
export const BACKLOG_LIMIT_SECONDS = 0.05;

export interface SustainabilityInput {
  rate: number;
  p99Ms: number;
  /** Rows recorded in the window; zero means nothing came through. */
  count: number;
  finalBacklog: number | null;
  /** Rows due in the window minus rows emitted in it. */
  backlogGrowth: number;
  /** The p99 a sustainable run stays under (default {@link SUSTAINABLE_P99_MS}; Infinity: none). */
  p99LimitMs?: number;
}

/** Whether a run kept up with its rate; `reasons` says why not. Pure. */
export function judgeSustainable(input: SustainabilityInput): { sustainable: boolean; reasons: string[] } {
  const limit = input.rate * BACKLOG_LIMIT_SECONDS;
  const reasons: string[] = [];
  if (input.count === 0) reasons.push('no row reached the sink in the window');
  const p99Limit = input.p99LimitMs ?? SUSTAINABLE_P99_MS;
  if (!(input.p99Ms < p99Limit)) {
    reasons.push(`p99 ${formatLatency(input.p99Ms)} ≥ ${p99Limit} ms`);
  }
  if (input.finalBacklog !== null && input.finalBacklog > limit) {
    reasons.push(`backlog ${Math.round(input.finalBacklog)} rows at the end > ${Math.round(limit)}`);
  }
  if (input.backlogGrowth > limit) {
    reasons.push(`backlog grew by ${Math.round(input.backlogGrowth)} rows over the window`);
  }
  return { sustainable: reasons.length === 0, reasons };
}
