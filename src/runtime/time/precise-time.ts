/**
 * Sub-millisecond wall-clock time that agrees between threads, for latency measurement.
 *
 * `performance.now()` is cheap but its origin differs per thread; `process.hrtime` is the same
 * monotonic clock in every thread of the process. Each thread measures the gap between the two
 * once; the driver measures the gap between the monotonic clock and `Date.now()` once per query
 * and hands it to every worker, so all threads convert with the same offset.
 */
const perfToMono = Number(process.hrtime.bigint()) / 1e6 - performance.now();

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
