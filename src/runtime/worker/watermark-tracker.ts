/** What a producer channel last said of its source partition (see {@link WatermarkTracker}). */
const UNHEARD = 0;
/** The partition has input it has not read yet: its value holds the input back. */
const BEHIND = 1;
/** The partition has read everything there is: its value counts, and holds nothing back. */
const CAUGHT_UP = 2;
/** The channel ended: its value counts, and holds nothing back. */
const ENDED = 3;

/**
 * What a task knows of event-time watermarks. Each watermark input (a `withWatermark` operator)
 * has a value, heard in-band from upstream or from a watermark operator in this task.
 *
 * Values come on two kinds of channel:
 *
 * - **Producers**, the tasks that run the watermark operator itself: each speaks for its own source
 *   partition (its largest event time − delay, on the channel its rows take) and says whether the
 *   partition still has input it has not read (`behind`: a backlog after a restart, a Kafka
 *   partition that lags). In real-time mode the input's value is the largest value heard, but never
 *   past the least value of a partition that is behind, or not heard from yet: a partition that
 *   lags holds the watermark back at its own, as Flink's per-split watermarks do, so no row of a
 *   backlog is ever late because another partition read faster; partitions that keep up combine by
 *   the maximum, as Spark's do. With an `idleTimeout`, a partition whose value has not moved that
 *   long (since the start, if it never reported) stops holding the input back until it moves. In
 *   micro-batch mode values combine by the maximum (a batch reads a backlog under the previous
 *   batch's watermark, Spark's rule).
 * - **Relays**, tasks that pass an input's markers on. A relaying task sends them down every
 *   channel, while a row takes one: a value relayed on one channel could overtake the rows that made
 *   it on another, and make them late. So a relayed value counts only once every channel relaying
 *   its input has delivered it (the minimum over those channels; an ended channel no longer counts)
 *   — then every row sent before it, on any path, has arrived.
 *
 * Values only grow. The watermark in force at the task's stateful operator is the policy over the
 * inputs above it — the minimum (default) or the maximum — and never moves backwards. An input not
 * heard from yet holds the minimum at −∞, unless it has an idle timeout and that much time passed
 * since the start: then it is left out until it reports.
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
  /** Per (input, channel) of a producer: 1 (see the class comment). */
  private readonly producer: Uint8Array;
  /** Per (input, channel): what a producer last said (UNHEARD, BEHIND, CAUGHT_UP, ENDED). */
  private readonly said: Uint8Array;
  /** Per (input, channel): when a producer's value last moved (the start, before it reported). */
  private readonly since: Float64Array;
  /** Per input: when a producer holding it back goes idle (Infinity: none will). */
  private readonly producerIdleAt: Float64Array;
  /** The least of {@link producerIdleAt}. */
  private producerDeadline = Number.POSITIVE_INFINITY;

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
    /** For each input, the task's input channels from the tasks that run its watermark operator. */
    private readonly producers: readonly (readonly number[])[] = [],
  ) {
    this.heard = new Float64Array(inputs * channels).fill(Number.NEGATIVE_INFINITY);
    this.producer = new Uint8Array(inputs * channels);
    this.said = new Uint8Array(inputs * channels);
    this.since = new Float64Array(inputs * channels).fill(Number.POSITIVE_INFINITY);
    this.producerIdleAt = new Float64Array(inputs).fill(Number.POSITIVE_INFINITY);
    for (const [input, list] of producers.entries())
      for (const c of list) this.producer[input * channels + c] = 1;
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
    for (const [input, list] of this.producers.entries()) {
      if (this.perBatch) break;
      for (const c of list) {
        const at = input * this.channels + c;
        if (this.said[at] === UNHEARD) this.since[at] = startTime;
      }
      this.settleProducers(input, startTime);
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

  /** When time alone may move the watermark (a silent input's or partition's idle timeout). */
  get nextDeadline(): number {
    return Math.min(this.deadline, this.producerDeadline);
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
   * A value for `input` arrived on input channel `channel` (`behind`: a producer's partition has
   * input it has not read yet); returns true when the watermark in force advanced.
   */
  fromChannel(channel: number, input: number, value: number, now: number, behind = false): boolean {
    const at = input * this.channels + channel;
    if (this.producer[at] === 1 && !this.perBatch) {
      let moved = false;
      if (value > this.heard[at]!) {
        this.heard[at] = value;
        this.since[at] = now;
        moved = true;
      }
      if (this.sayBacklog(at, behind, now)) moved = true;
      return moved && this.settleProducers(input, now);
    }
    const carriers = this.carriers[input];
    if (carriers === undefined || !carriers.includes(channel)) return this.advance(input, value, now);
    if (!(value > this.heard[at]!)) return false;
    this.heard[at] = value;
    return this.settle(input, now);
  }

  /**
   * A row that came on producer channel `channel` moved its source partition's value of `input`
   * (a task that keeps a watermark per source partition: see wireInputs). Returns true when the
   * watermark in force advanced.
   */
  fromPartition(channel: number, input: number, value: number, now: number): boolean {
    const at = input * this.channels + channel;
    if (!(value > this.heard[at]!)) return false;
    this.heard[at] = value;
    this.since[at] = now;
    return this.settleProducers(input, now);
  }

  /**
   * The source task on `channel` says whether its partition has input it has not read yet (a
   * BACKLOG marker), for every input the channel produces. Returns true when the watermark in
   * force advanced.
   */
  channelBacklog(channel: number, behind: boolean, now: number): boolean {
    if (this.perBatch) return false;
    let advanced = false;
    for (let input = 0; input < this.producers.length; input++) {
      const at = input * this.channels + channel;
      if (this.producer[at] !== 1 || this.said[at] === ENDED) continue;
      if (this.sayBacklog(at, behind, now) && this.settleProducers(input, now)) advanced = true;
    }
    return advanced;
  }

  /** A producer channel says whether its partition is behind; returns whether that changed. */
  private sayBacklog(at: number, behind: boolean, now: number): boolean {
    const said = behind ? BEHIND : CAUGHT_UP;
    if (this.said[at] === said) return false;
    // A partition that starts to lag counts as active from now (its idle time starts over).
    if (this.said[at] === UNHEARD || said === BEHIND) this.since[at] = now;
    this.said[at] = said;
    return true;
  }

  /** Whether a producer of one of `inputs` is behind, or not heard from yet. */
  holding(inputs: readonly number[]): boolean {
    for (const input of inputs) {
      for (const c of this.producers[input] ?? []) {
        const said = this.said[input * this.channels + c];
        if (said === UNHEARD || said === BEHIND) return true;
      }
    }
    return false;
  }

  /** Channel `channel` ended: it no longer holds back the inputs it carried. */
  channelEnded(channel: number, now: number): boolean {
    let advanced = false;
    for (let input = 0; input < this.producers.length; input++) {
      const at = input * this.channels + channel;
      if (this.producer[at] !== 1 || this.said[at] === ENDED) continue;
      this.said[at] = ENDED;
      if (!this.perBatch && this.settleProducers(input, now)) advanced = true;
    }
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

  /**
   * The value of an input its producers give: the largest they reported, but not past the least of
   * a partition that is behind or not heard from (unless it has been idle for the input's
   * `idleTimeout`). Returns true when the watermark in force advanced.
   */
  private settleProducers(input: number, now: number): boolean {
    const list = this.producers[input]!;
    const idle = this.idleTimeouts[input];
    let max = Number.NEGATIVE_INFINITY;
    let hold = Number.POSITIVE_INFINITY;
    let idleAt = Number.POSITIVE_INFINITY;
    for (let i = 0; i < list.length; i++) {
      const at = input * this.channels + list[i]!;
      const v = this.heard[at]!;
      if (v > max) max = v;
      const said = this.said[at];
      if (said === CAUGHT_UP || said === ENDED) continue;
      if (idle !== undefined) {
        const at2 = this.since[at]! + idle;
        if (now >= at2) continue; // idle: left out until its value moves
        if (at2 < idleAt) idleAt = at2;
      }
      if (v < hold) hold = v;
    }
    this.producerIdleAt[input] = idleAt;
    let deadline = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.producerIdleAt.length; i++)
      deadline = Math.min(deadline, this.producerIdleAt[i]!);
    this.producerDeadline = deadline;
    const value = Math.min(max, hold);
    return value !== Number.NEGATIVE_INFINITY && this.advance(input, value, now);
  }

  /** Time passed: returns true when an input or partition went idle and the watermark in force advanced. */
  tick(now: number): boolean {
    if (this.perBatch) return false;
    let advanced = false;
    if (now >= this.producerDeadline) {
      for (let input = 0; input < this.producers.length; input++) {
        if (now >= this.producerIdleAt[input]! && this.settleProducers(input, now)) advanced = true;
      }
    }
    if (now >= this.deadline && this.recompute(now)) advanced = true;
    return advanced;
  }

  /** Sends `input`'s value down again at the next {@link flush} (what the task says of it changed). */
  touch(input: number): void {
    this.changed[input] = 1;
    this.anyChanged = true;
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
