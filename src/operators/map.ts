import type { PlannedOperator } from '../plan/analyze.js';
import type { OperatorContext, RowSink } from './contract.js';

export class MapOperator implements RowSink {
  private readonly fn: (row: unknown) => unknown;

  constructor(
    private readonly op: PlannedOperator<'map'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
  ) {
    this.fn = op.node.fn;
  }

  push(row: unknown): void {
    let out: unknown;
    try {
      out = this.fn(row);
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return;
    }
    // Outside the try: an error downstream belongs to the downstream operator.
    this.next.push(out);
  }
}
