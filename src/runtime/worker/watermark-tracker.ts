/**
 * What a task knows of event-time watermarks. Each watermark input (a `withWatermark` operator)
 * has a value: the largest `max event time − delay` any of its partitions reported, as heard
 * in-band from upstream or from a watermark operator in this task.
 *
 * A task that relays an input's markers sends them down every channel, while a row takes one: a
 * value relayed on one channel could overtake the rows that made it on another, and make them late.
 * So a relayed value counts only once every channel relaying its input has delivered it (the
 * minimum over those channels; an ended channel no longer counts) — then every row sent before it,
 * on any path, has arrived. Values from the tasks that run the watermark operator itself are each
 * their own partition's, on the channel their rows take: they combine by the maximum, at once. Values only grow. The watermark
 * in force at the task's stateful operator is the policy over the inputs above it — the minimum
 * (default) or the maximum — and never moves backwards. An input not heard from yet holds the
 * minimum at −∞, unless it has an idle timeout and that much time passed since the start: then it
 * is left out until it reports.
 */
export class WatermarkTracker {
  private readonly known: Float64Array;
  /** Value heard per (input, channel): index `input × channels + channel`. */
  private readonly heard: Float64Array;
  private readonly changed: Uint8Array;
  /** Clock time after which a silent input stops holding the minimum (Infinity: never). */
  private readonly idleAt: Float64Array;
  private anyChanged = false;
  private current = Number.NEGATIVE_INFINITY;
  /** Micro-batch mode: the watermark the previous batch ran with (see {@link lateWatermark}). */
  private previous = Number.NEGATIVE_INFINITY;
  /** The next idle deadline of a relevant input still silent (Infinity: none). */
  private deadline = Number.POSITIVE_INFINITY;

  constructor(
    inputs: number,
    /** The inputs the task's stateful operator keeps time by (empty: none). */
    private readonly relevant: readonly number[],
    private readonly policy: 'min' | 'max',
    /**
     * Micro-batch mode: the watermark in force changes only at batch ends (`commitBatch`), so a
     * whole batch is judged by the watermark computed at the end of the previous one.
     */
    private readonly perBatch: boolean,
    private readonly idleTimeouts: readonly (number | undefined)[],
    /** For each input, the task's input channels that relay its markers (see the class comment). */
    private readonly carriers: readonly (readonly number[])[] = [],
    private readonly channels = 0,
    /**
     * How far the stateful operator's watermark trails the one in force: the stream–stream joins
     * upstream hold rows back by their time range (AnalyzedPlan.watermarkLags).
     */
    readonly lag = 0,
  ) {
    this.heard = new Float64Array(inputs * channels).fill(Number.NEGATIVE_INFINITY);
    this.known = new Float64Array(inputs).fill(Number.NEGATIVE_INFINITY);
    this.changed = new Uint8Array(inputs);
    this.idleAt = new Float64Array(inputs).fill(Number.POSITIVE_INFINITY);
  }

  /**
   * A resumed run starts from the values the last committed epoch reached; in micro-batch mode its
   * first batch judges late rows by `late`, the watermark the last committed batch ran with.
   */
  restore(values: readonly number[], late = Number.NEGATIVE_INFINITY): void {
    for (let i = 0; i < this.known.length; i++) {
      const v = values[i] ?? Number.NEGATIVE_INFINITY;
      if (v > this.known[i]!) this.known[i] = v;
    }
    this.recompute(Number.NEGATIVE_INFINITY);
    this.previous = Math.min(this.current, late);
  }

  /** What the task has heard of each input. */
  values(): number[] {
    return Array.from(this.known);
  }

  /** The query's clock started: idle timeouts count from here. */
  start(startTime: number): void {
    for (let i = 0; i < this.idleAt.length; i++) {
      const t = this.idleTimeouts[i];
      this.idleAt[i] = t === undefined ? Number.POSITIVE_INFINITY : startTime + t;
    }
    this.deadline = Math.min(Number.POSITIVE_INFINITY, ...this.relevant.map((i) => this.idleAt[i]!));
  }

  /** The watermark in force (−∞ before any): what the task reports and checkpoints. */
  get inForce(): number {
    return this.current;
  }

  /** The stateful operator's watermark (the one in force less the lag): what state is evicted and emitted by. */
  get watermark(): number {
    return this.current - this.lag;
  }

  /**
   * The watermark rows are judged late by. In real-time mode the one in force. In micro-batch mode
   * Spark's rule: the previous batch's, so that the rows an operator upstream emitted as the
   * watermark closed them (in this batch, by the watermark in force) are not late for the next
   * operator of a chain.
   */
  get lateWatermark(): number {
    return (this.perBatch ? this.previous : this.current) - this.lag;
  }

  /** When time alone may move the watermark (a silent input's idle timeout). */
  get nextDeadline(): number {
    return this.deadline;
  }

  /** Records a value for an input; returns true when the watermark in force advanced. */
  advance(input: number, value: number, now: number): boolean {
    if (!(value > this.known[input]!)) return false;
    this.known[input] = value;
    this.changed[input] = 1;
    this.anyChanged = true;
    return !this.perBatch && this.recompute(now);
  }

  /**
   * A value for `input` arrived on input channel `channel`; returns true when the watermark in force
   * advanced.
   */
  fromChannel(channel: number, input: number, value: number, now: number): boolean {
    const carriers = this.carriers[input];
    if (carriers === undefined || !carriers.includes(channel)) return this.advance(input, value, now);
    const at = input * this.channels + channel;
    if (!(value > this.heard[at]!)) return false;
    this.heard[at] = value;
    return this.settle(input, now);
  }

  /** Channel `channel` ended: it no longer holds back the inputs it carried. */
  channelEnded(channel: number, now: number): boolean {
    let advanced = false;
    for (let input = 0; input < this.carriers.length; input++) {
      if (!this.carriers[input]!.includes(channel)) continue;
      this.heard[input * this.channels + channel] = Number.POSITIVE_INFINITY;
      if (this.settle(input, now)) advanced = true;
    }
    return advanced;
  }

  /** Takes the value every live carrier of `input` has delivered. */
  private settle(input: number, now: number): boolean {
    let min = Number.POSITIVE_INFINITY;
    for (const c of this.carriers[input]!) min = Math.min(min, this.heard[input * this.channels + c]!);
    return min !== Number.POSITIVE_INFINITY && this.advance(input, min, now);
  }

  /** Time passed: returns true when an input went idle and the watermark in force advanced. */
  tick(now: number): boolean {
    return !this.perBatch && now >= this.deadline && this.recompute(now);
  }

  /** Micro-batch end: the watermark in force for the next batch. */
  commitBatch(now: number): number {
    this.previous = this.current;
    this.recompute(now);
    return this.current;
  }

  private recompute(now: number): boolean {
    if (this.relevant.length === 0) return false;
    const min = this.policy === 'min';
    let w = min ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    let deadline = Number.POSITIVE_INFINITY;
    for (const i of this.relevant) {
      const v = this.known[i]!;
      if (v === Number.NEGATIVE_INFINITY && min) {
        const idleAt = this.idleAt[i]!;
        if (now >= idleAt) continue; // silent past its idle timeout: left out
        deadline = Math.min(deadline, idleAt);
      }
      w = min ? Math.min(w, v) : Math.max(w, v);
    }
    this.deadline = deadline;
    if (w !== Number.POSITIVE_INFINITY && w > this.current) {
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
