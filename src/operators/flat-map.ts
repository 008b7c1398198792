import type { PlannedOperator } from '../plan/analyze.js';
import type { OperatorContext, RowSink } from './contract.js';

export class FlatMapOperator implements RowSink {
  private readonly fn: (row: unknown) => Iterable<unknown> | null | undefined;

  constructor(
    private readonly op: PlannedOperator<'flatMap'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
  ) {
    this.fn = op.node.fn;
  }

  push(row: unknown): void {
    let out: unknown[];
    try {
      const result = this.fn(row);
      if (result == null) return;
      // Materialise first so a generator that throws half-way emits nothing for this row.
      out = Array.isArray(result) ? result : Array.from(result);
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return;
    }
    for (let i = 0; i < out.length; i++) this.next.push(out[i]);
  }
}
