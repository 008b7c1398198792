/**
 * What a task knows of event-time watermarks. Each watermark input (a `withWatermark` operator)
 * has a value: the largest `max event time − delay` any of its partitions reported, as heard
 * in-band from upstream or from a watermark operator in this task. Values only grow. The watermark
 * in force at the task's stateful operator is the policy over the inputs above it — the minimum
 * (default) or the maximum — and never moves backwards. An input not heard from yet holds the
 * minimum at −∞.
 */
export class WatermarkTracker {
  private readonly known: Float64Array;
  private readonly changed: Uint8Array;
  private anyChanged = false;
  private current = Number.NEGATIVE_INFINITY;

  constructor(
    inputs: number,
    /** The inputs the task's stateful operator keeps time by (empty: none). */
    private readonly relevant: readonly number[],
    private readonly policy: 'min' | 'max',
    /**
     * Micro-batch mode: the watermark in force changes only at batch ends (`commitBatch`), so a
     * whole batch is judged by the watermark computed at the end of the previous one.
     */
    private readonly perBatch = false,
  ) {
    this.known = new Float64Array(inputs).fill(Number.NEGATIVE_INFINITY);
    this.changed = new Uint8Array(inputs);
  }

  /** The watermark in force (−∞ before any). */
  get watermark(): number {
    return this.current;
  }

  /** Records a value for an input; returns true when the watermark in force advanced. */
  advance(input: number, value: number): boolean {
    if (!(value > this.known[input]!)) return false;
    this.known[input] = value;
    this.changed[input] = 1;
    this.anyChanged = true;
    return !this.perBatch && this.recompute();
  }

  /** Micro-batch end: the watermark for the next batch. */
  commitBatch(): number {
    this.recompute();
    return this.current;
  }

  private recompute(): boolean {
    if (this.relevant.length === 0) return false;
    let w = this.policy === 'min' ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    for (const i of this.relevant) {
      const v = this.known[i]!;
      w = this.policy === 'min' ? Math.min(w, v) : Math.max(w, v);
    }
    if (w > this.current) {
      this.current = w;
      return true;
    }
    return false;
  }

  /** Hands every input whose value changed since the last call to `emit` (to forward downstream). */
  flush(emit: (input: number, value: number) => void): void {
    if (!this.anyChanged) return;
    this.anyChanged = false;
    for (let i = 0; i < this.changed.length; i++) {
      if (this.changed[i] === 0) continue;
      this.changed[i] = 0;
      emit(i, this.known[i]!);
    }
  }
}
