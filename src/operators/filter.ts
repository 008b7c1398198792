import type { PlannedOperator } from '../plan/analyze.js';
import type { OperatorContext, RowSink } from './contract.js';

export class FilterOperator implements RowSink {
  private readonly fn: (row: unknown) => unknown;

  constructor(
    private readonly op: PlannedOperator<'filter'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
  ) {
    this.fn = op.node.fn;
  }

  push(row: unknown): void {
    let keep: unknown;
    try {
      keep = this.fn(row);
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return;
    }
    if (keep) this.next.push(row);
  }
}
