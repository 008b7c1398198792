import type { PlannedOperator } from '../plan/analyze.js';
import { HeldRows } from './arrow/held-rows.js';
import type { HoldingOperator, OperatorContext, RowSink } from './contract.js';

/**
 * `mapPartitions(fn)`: holds the rows its partition receives in a trigger's batch, then calls `fn`
 * with all of them at the batch's end and lets its output go on before the batch's barrier.
 * Micro-batch mode only (analysis refuses it in real-time mode): it holds every row of a batch,
 * which is what a real-time query must not do. The output rows carry the metadata of the batch's
 * first row (they cannot be traced to single input rows). A throw in `fn` is a bad record for
 * every row of the batch.
 */
export class MapPartitionsOperator implements HoldingOperator {
  readonly holding = true as const;
  private held = new HeldRows();
  private out: unknown[] | null = null;
  private next_ = 0;
  private readonly fn: (rows: Iterable<unknown>) => Iterable<unknown> | null | undefined;

  constructor(
    private readonly op: PlannedOperator<'mapPartitions'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
  ) {
    this.fn = op.node.fn;
  }

  push(row: unknown): void {
    this.held.add(row, this.ctx.meta);
  }

  holds(batchEnd: boolean): boolean {
    return this.out !== null || (batchEnd && this.held.length > 0);
  }

  full(): boolean {
    return this.out !== null;
  }

  ready(): boolean {
    return this.out !== null;
  }

  awaiting(): boolean {
    return false;
  }

  close(batchEnd: boolean): void {
    if (!batchEnd || this.out !== null || this.held.length === 0) return;
    const held = this.held;
    this.held = new HeldRows();
    try {
      const result = this.fn(held.rows);
      this.out = result == null ? [] : Array.isArray(result) ? result : Array.from(result);
    } catch (e) {
      for (let i = 0; i < held.length; i++) {
        held.restore(i, this.ctx.meta);
        this.ctx.badRecord(this.op, held.rows[i], e);
      }
      return;
    }
    held.restore(0, this.ctx.meta);
    this.next_ = 0;
    this.advance();
  }

  advance(): boolean {
    const out = this.out;
    if (out === null) return false;
    while (this.next_ < out.length) {
      if (this.ctx.outputBlocked()) return true;
      this.next.push(out[this.next_++]);
    }
    this.out = null;
    return true;
  }
}
