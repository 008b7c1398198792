// The module's binding: the global `performance` is a lazy getter, ≈ 10–40 ns more per call.
import { performance } from 'node:perf_hooks';

/**
 * Sub-millisecond wall-clock time that agrees between threads, for latency measurement.
 *
 * `performance.now()` is cheap but its origin differs per thread; `process.hrtime` is the same
 * monotonic clock in every thread of the process. Each thread measures the gap between the two
 * once; the driver measures the gap between the monotonic clock and `Date.now()` once per query
 * and hands it to every worker, so all threads convert with the same offset.
 */
const perfToMono = measurePerfToMono();

/**
 * The gap between `performance.now()` and the monotonic clock, from the tightest of several
 * bracketed readings. A single reading is off by whatever the first call to either clock costs in
 * a fresh thread (over a millisecond in a new worker), which would skew every latency measured
 * across two threads.
 */
function measurePerfToMono(): number {
  performance.now();
  process.hrtime.bigint();
  let best = Number.POSITIVE_INFINITY;
  let gap = 0;
  for (let i = 0; i < 25; i++) {
    const before = performance.now();
    const mono = Number(process.hrtime.bigint()) / 1e6;
    const after = performance.now();
    if (after - before < best) {
      best = after - before;
      gap = mono - (before + after) / 2;
    }
  }
  return gap;
}

/** Monotonic milliseconds, same origin in every thread of the process. */
export function monoNow(): number {
  return performance.now() + perfToMono;
}

/** The offset to add to {@link monoNow} to get wall-clock ms; measured once by the driver. */
export function measureWallOffset(): number {
  return Date.now() - monoNow();
}

/** Wall-clock ms with µs resolution, given the query's shared offset. */
export class PreciseTime {
  private readonly offset: number;

  constructor(wallOffset: number) {
    this.offset = perfToMono + wallOffset;
  }

  now(): number {
    return performance.now() + this.offset;
  }
}
