/**
 * Shared by the ring harness, its worker threads and the micro-benchmarks: the pool of card
 * payments they move, and small statistics helpers.
 */

import { DEFAULT_CARDS, type Payment, paymentStream } from '../src/demo/payments.js';

/**
 * The card payments the ring carries: the benchmarks' even spread (src/demo/payments.ts), one
 * sequence numbered from 0, every transaction id as long as the next.
 */
const generate = paymentStream({ stride: 1, cards: DEFAULT_CARDS, cardOrder: 'walk', txIds: 'serial' });

/**
 * A pool of `size` distinct payments (a power of two), the first `size` of the stream, cycled by
 * producers so the generator is not measured. A record encodes to ≈ 65 bytes with msgpackr
 * (sequential: the structure sent once).
 */
export function paymentPool(size: number): Payment[] {
  return Array.from({ length: size }, (_, i) => generate(0, i, 1_760_000_000_000 + i));
}

/** Median, min and max of a set of per-run figures. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const median =
    n === 0 ? Number.NaN : n % 2 === 1 ? sorted[n >> 1]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  return { median, min: sorted[0] ?? Number.NaN, max: sorted[n - 1] ?? Number.NaN, runs: [...values] };
}

/** Nearest-rank percentile of an ascending array (p in [0, 1]). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.round(p * (sorted.length - 1)));
  return sorted[i]!;
}

/** Latency figures (ns) a worker reports for one run. */
export interface LatencyStats {
  p50Ns: number;
  p90Ns: number;
  p99Ns: number;
  p999Ns: number;
  minNs: number;
  maxNs: number;
  meanNs: number;
}

export function latencyStats(samplesNs: Float64Array): LatencyStats {
  const s = samplesNs.slice().sort();
  let sum = 0;
  for (let i = 0; i < s.length; i++) sum += s[i]!;
  return {
    p50Ns: percentile(s, 0.5),
    p90Ns: percentile(s, 0.9),
    p99Ns: percentile(s, 0.99),
    p999Ns: percentile(s, 0.999),
    minNs: s[0] ?? Number.NaN,
    maxNs: s[s.length - 1] ?? Number.NaN,
    meanNs: sum / s.length,
  };
}
