import type { HoldingOperator } from '../../operators/contract.js';

/**
 * The operators of a task's chain that hold rows across pushes (Arrow UDFs, mapPartitions), in
 * chain order, and what the task asks of them together: whether it may read input, whether a
 * marker must wait for their rows, whether they have work. A task without any pays one boolean
 * test (`any`) on its row path.
 */
export class HeldOperators {
  readonly any: boolean;
  /**
   * A marker waits in its ring behind rows these operators hold: until they are out, that frame is
   * no work (the host parks until an answer arrives instead of stepping the task).
   */
  private markerWaits = false;

  constructor(private readonly ops: readonly HoldingOperator[]) {
    this.any = ops.length > 0;
  }

  /** Takes the answers that arrived and lets rows go on; how many operators did something. */
  advance(): number {
    let n = 0;
    for (let h = 0; h < this.ops.length; h++) if (this.ops[h]!.advance()) n++;
    return n;
  }

  /** An operator can take no more rows now: the task reads no input. */
  full(): boolean {
    for (let h = 0; h < this.ops.length; h++) if (this.ops[h]!.full()) return true;
    return false;
  }

  /** No more input waits: what the operators hold goes to their UDF threads now. */
  inputDrained(): void {
    for (let h = 0; h < this.ops.length; h++) this.ops[h]!.close(false);
  }

  /**
   * A marker arrived: whether it must wait for rows held before it (every marker follows the rows
   * before it). `batchEnd` (a barrier, a batch's or the stream's end) also ends mapPartitions'
   * batch. The held rows are sent (or let go) now; the marker stays in its ring until they are out.
   */
  holdMarker(batchEnd: boolean): boolean {
    let held = false;
    for (let h = 0; h < this.ops.length; h++) {
      const op = this.ops[h]!;
      if (!op.holds(batchEnd)) continue;
      op.close(batchEnd);
      if (op.holds(batchEnd)) held = true;
    }
    this.markerWaits = held;
    return held;
  }

  /** Whether an operator holds rows that a marker arriving now would have to wait for. */
  holding(): boolean {
    for (let h = 0; h < this.ops.length; h++) if (this.ops[h]!.holds(false)) return true;
    return false;
  }

  /** The marker last refused is still waiting for held rows (so the frame in its ring is no work). */
  markerBlocked(): boolean {
    if (!this.markerWaits) return false;
    for (let h = 0; h < this.ops.length; h++) if (this.ops[h]!.holds(false)) return true;
    this.markerWaits = false;
    return false;
  }

  /** Whether the last marker refused waits for held rows. */
  get markerHeld(): boolean {
    return this.markerWaits;
  }

  /** An answer waits to be taken, or rows to be let go. */
  ready(): boolean {
    for (let h = 0; h < this.ops.length; h++) if (this.ops[h]!.ready()) return true;
    return false;
  }

  /** A batch is with a UDF thread and its answer not back yet. */
  awaiting(): boolean {
    for (let h = 0; h < this.ops.length; h++) if (this.ops[h]!.awaiting()) return true;
    return false;
  }
}
