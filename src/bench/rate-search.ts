/**
 * The search for the highest sustainable rate (T1): double from a start rate until a run is not
 * sustainable, then bisect between the highest sustainable and the lowest unsustainable rate until
 * they are within `precision` of each other. When even the start rate is not sustainable it halves
 * instead. Pure decision logic; the caller runs each probe and may stop early (time budget).
 */
export class RateSearch {
  /** Highest rate found sustainable (0: none yet). */
  best = 0;
  /** Lowest rate found unsustainable (Infinity: none yet). */
  worst = Number.POSITIVE_INFINITY;
  readonly tried: { rate: number; sustainable: boolean }[] = [];
  private candidate: number;

  constructor(
    start: number,
    private readonly options: { precision: number; floor: number; ceiling: number; step: number },
  ) {
    this.candidate = this.round(start);
  }

  /** The next rate to try, or null when the search is done. */
  next(): number | null {
    const { precision, floor, ceiling } = this.options;
    if (this.worst !== Number.POSITIVE_INFINITY && this.worst - this.best <= this.worst * precision)
      return null;
    if (this.best >= ceiling) return null;
    if (this.best === 0 && this.worst <= floor) return null;
    const rate = this.candidate;
    if (this.tried.some((t) => t.rate === rate)) return null;
    return rate;
  }

  record(rate: number, sustainable: boolean): void {
    this.tried.push({ rate, sustainable });
    if (sustainable) this.best = Math.max(this.best, rate);
    else this.worst = Math.min(this.worst, rate);
    const { floor, ceiling } = this.options;
    if (this.worst === Number.POSITIVE_INFINITY)
      this.candidate = Math.min(ceiling, this.round(this.best * 2));
    else if (this.best === 0) this.candidate = Math.max(floor, this.round(this.worst / 2));
    else this.candidate = this.round((this.best + this.worst) / 2);
  }

  /** Rates are multiples of `step`, so reports read well. */
  private round(rate: number): number {
    const { step } = this.options;
    return Math.max(step, Math.round(rate / step) * step);
  }
}
