import type { GeneratedRows } from './contract.js';

/**
 * The schedule of one partition of a generated source: `n` rows are due once `n / rate` ms have
 * passed since the start (rate in rows per ms for this partition), so row `i` is due at
 * `start + (i + 1) / rate`. With a ramp-up of R ms the rate grows linearly from 0, so `n` rows
 * are due at `start + sqrt(2 R n / rate)` until the ramp ends.
 *
 * Times are computed as `n * 1000 * partitions / rowsPerSecond` so whole-number schedules stay
 * exact (10 rows/s: row 9 is due at exactly +1000 ms, which manual-clock tests rely on).
 */
export class GeneratorSchedule {
  private readonly msNumerator: number;
  private readonly rowsPerSecond: number;
  private readonly rate: number;
  private readonly ramp: number;
  private readonly rampRows: number;

  constructor(
    spec: GeneratedRows,
    private readonly start: number,
  ) {
    this.msNumerator = 1000 * spec.partitions;
    this.rowsPerSecond = spec.rowsPerSecond;
    this.rate = spec.rowsPerSecond / this.msNumerator;
    this.ramp = spec.rampUpTimeMs;
    this.rampRows = (this.rate * this.ramp) / 2;
  }

  /** Clock time at which row `i` is due. */
  dueTime(i: number): number {
    const n = i + 1;
    if (n <= this.rampRows) return this.start + Math.sqrt((2 * this.ramp * n) / this.rate);
    return this.start + this.ramp + ((n - this.rampRows) * this.msNumerator) / this.rowsPerSecond;
  }

  /** How many rows are due by clock time `now` (the source's latest offset). */
  dueCount(now: number): number {
    const t = now - this.start;
    if (t <= 0) return 0;
    if (t < this.ramp) return Math.floor((this.rate * t * t) / (2 * this.ramp));
    return Math.floor(this.rampRows + ((t - this.ramp) * this.rowsPerSecond) / this.msNumerator);
  }
}
