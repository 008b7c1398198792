import type { PlannedOperator } from '../plan/analyze.js';
import { compileExpr } from '../plan/expressions.js';
import type { OperatorContext, RowSink } from './contract.js';

/** Builds a new plain object with the selected columns, in the order given. */
export class SelectOperator implements RowSink {
  private readonly names: string[];
  private readonly getters: ((row: unknown) => unknown)[];

  constructor(
    private readonly op: PlannedOperator<'select'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
  ) {
    this.names = op.node.columns.map((c) => c.name);
    this.getters = op.node.columns.map((c) => compileExpr(c.expr));
  }

  push(row: unknown): void {
    const out: Record<string, unknown> = {};
    try {
      for (let i = 0; i < this.names.length; i++) out[this.names[i]!] = this.getters[i]!(row);
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return;
    }
    this.next.push(out);
  }
}
