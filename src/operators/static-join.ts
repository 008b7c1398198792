import type { PlannedOperator } from '../plan/analyze.js';
import type { OperatorContext, RowSink, StaticIndex } from './contract.js';
import { JoinEmitter, joinKeyOf } from './join-rows.js';

/**
 * `stream.join(table, ...)`: a chained, stateless operator. The table was loaded and indexed by key
 * when the worker started (one hash lookup per row); each stream row goes on once per table row with
 * its key, or — in a left outer join, when there is none — once with the table side missing.
 */
export class StaticJoinOperator implements RowSink {
  private readonly index: StaticIndex;
  private readonly key: (row: unknown) => string | null;
  private readonly outer: boolean;
  private readonly out: JoinEmitter;

  constructor(op: PlannedOperator<'staticJoin'>, next: RowSink, ctx: OperatorContext) {
    this.index = ctx.staticTable(op.id);
    this.key = joinKeyOf(op.node.keys);
    this.outer = op.node.type === 'leftOuter';
    this.out = new JoinEmitter(op, op.node.combine, next, ctx);
  }

  push(row: unknown): void {
    const key = this.key(row);
    const matches = key === null ? undefined : this.index.get(key);
    if (matches === undefined) {
      if (this.outer) this.out.emit(row, null, row);
      return;
    }
    for (let i = 0; i < matches.length; i++) this.out.emit(row, matches[i], row);
  }
}
