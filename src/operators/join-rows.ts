import { mergeRows } from '../plan/join.js';
import type { OperatorContext, OperatorRef, RowSink } from './contract.js';

/**
 * The string a row's join key is compared by, or null when a key column is null or absent: such a
 * row matches nothing (as in SQL). The same function indexes a static table and reads stream rows
 * of both sides, so equal values give equal strings; a number and its text differ (`5` ≠ `'5'`).
 */
export function joinKeyOf(keys: readonly string[]): (row: unknown) => string | null {
  if (keys.length === 1) {
    const k = keys[0]!;
    return (row) => {
      const v = (row as Record<string, unknown> | null)?.[k];
      if (v == null) return null;
      if (typeof v === 'string') return `s${v}`;
      if (typeof v === 'number') return `n${v}`;
      return JSON.stringify([v]);
    };
  }
  return (row) => {
    const r = row as Record<string, unknown> | null;
    const values: unknown[] = [];
    for (const k of keys) {
      const v = r?.[k];
      if (v == null) return null;
      values.push(v);
    }
    return JSON.stringify(values);
  };
}

/**
 * Emits joined rows for both join kinds: the node's `combine` of (left, right), or the merged row;
 * a throwing `combine` makes the input row a bad record.
 */
export class JoinEmitter {
  private readonly combine: (left: unknown, right: unknown) => unknown;

  constructor(
    private readonly op: OperatorRef,
    combine: ((left: any, right: any) => unknown) | undefined,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
  ) {
    this.combine = combine ?? mergeRows;
  }

  /** `left` or `right` is null in an outer join's unmatched row; `input` is the row being handled. */
  emit(left: unknown, right: unknown, input: unknown): void {
    let out: unknown;
    try {
      out = this.combine(left, right);
    } catch (e) {
      this.ctx.badRecord(this.op, input, e);
      return;
    }
    this.next.push(out);
  }
}
