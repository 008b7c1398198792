/**
 * Rows a task reads after a deferred watermark before it stops reading and waits for the held rows
 * to go on: the watermark is late by at most this many rows (and their batches' round trips),
 * while the batches behind it fill.
 */
const DEFERRED_ROWS_MAX = 1024;

/**
 * Watermark markers that arrived behind rows an operator of the task's chain holds (an Arrow batch
 * waiting for its answer). A marker must not overtake the rows before it, so such a marker used
 * to stay in its ring until they were out, and the task read nothing meanwhile. A source task
 * sends a watermark after nearly every row, so every batch was one row and each row waited for
 * the one before to come back: a UDF thread's round trip bounded the rate, and a query behind its
 * input (at its start) never caught up by batching. A watermark may come late — it promises only
 * that no row before it is dropped — so the task takes it out of the ring, keeps its latest value
 * per input here, reads on (the batches fill), and applies it once the operators hold no rows;
 * after {@link DEFERRED_ROWS_MAX} rows it stops reading until then. Markers of other kinds
 * (barriers, flushes, the end) still wait in their rings, and apply what is kept here first.
 */
export class DeferredWatermarks {
  private readonly channels: number[] = [];
  private readonly inputs: number[] = [];
  private readonly values: number[] = [];
  private readonly behind: boolean[] = [];
  private rowsSince = 0;

  /** Whether a watermark waits here. */
  get any(): boolean {
    return this.channels.length > 0;
  }

  /** Whether a watermark arriving now may wait here (few enough rows were read since the first). */
  canDefer(): boolean {
    return this.rowsSince < DEFERRED_ROWS_MAX;
  }

  /** Keeps watermark `value` of watermark input `input`, heard on `channel`, for later. */
  defer(channel: number, input: number, value: number, behind: boolean): void {
    for (let i = 0; i < this.channels.length; i++) {
      if (this.channels[i] === channel && this.inputs[i] === input) {
        this.values[i] = value;
        this.behind[i] = behind;
        return;
      }
    }
    this.channels.push(channel);
    this.inputs.push(input);
    this.values.push(value);
    this.behind.push(behind);
  }

  /** A row was read behind the watermarks kept here. */
  rowRead(): void {
    this.rowsSince++;
  }

  /** Hands each kept watermark to `apply`, in the order they first arrived, and forgets them. */
  apply(apply: (channel: number, input: number, value: number, behind: boolean) => void): void {
    for (let i = 0; i < this.channels.length; i++)
      apply(this.channels[i]!, this.inputs[i]!, this.values[i]!, this.behind[i]!);
    this.channels.length = 0;
    this.inputs.length = 0;
    this.values.length = 0;
    this.behind.length = 0;
    this.rowsSince = 0;
  }
}
