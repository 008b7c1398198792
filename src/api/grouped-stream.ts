import { invalidArgument } from '../errors.js';
import type { LogicalNode } from '../plan/nodes.js';
import { type AggregateSpec, agg, isAggregateSpec } from './aggregates.js';
import { Stream } from './stream.js';
import { type AnyWindow, isWindow } from './window.js';

/**
 * The result of `groupBy(...)`: name the aggregates to compute per group. Output rows hold the
 * grouping columns by name, `window: { start, end }` when grouping by a time window, then the
 * aggregates by the names given.
 */
export class GroupedStream {
  /** @internal */
  constructor(
    private readonly input: LogicalNode,
    private readonly keys: readonly string[],
    private readonly window: AnyWindow | undefined,
  ) {
    Object.freeze(this);
  }

  /** @example grouped.agg({ total: agg.sum('amount'), n: agg.count() }) */
  agg(aggregates: Record<string, AggregateSpec>): Stream<any> {
    if (typeof aggregates !== 'object' || aggregates === null)
      throw invalidArgument('agg({...}): name the aggregates');
    const list = Object.entries(aggregates).map(([name, spec]) => {
      if (!isAggregateSpec(spec))
        throw invalidArgument(`agg: '${name}' must be an aggregate such as agg.sum('amount')`);
      if (name === 'window' || this.keys.includes(name)) {
        throw invalidArgument(`agg: the output name '${name}' is already taken by a grouping column`);
      }
      return Object.freeze({ name, spec });
    });
    if (list.length === 0) throw invalidArgument('agg({...}): name at least one aggregate');
    return new Stream(
      Object.freeze({
        kind: 'aggregate',
        input: this.input,
        keys: this.keys,
        window: this.window,
        aggregates: Object.freeze(list),
        label: undefined,
      }),
    );
  }

  /** Shorthand for `agg({ count: agg.count() })`. */
  count(): Stream<any> {
    return this.agg({ count: agg.count() });
  }
}

/** Splits groupBy's arguments into columns and at most one time window. */
export function groupingOf(args: readonly unknown[]): { keys: string[]; window: AnyWindow | undefined } {
  const keys: string[] = [];
  let win: AnyWindow | undefined;
  for (const a of args) {
    if (isWindow(a)) {
      if (win) throw invalidArgument('groupBy: at most one window');
      win = a;
    } else if (typeof a === 'string' && a !== '') {
      if (keys.includes(a)) throw invalidArgument(`groupBy: column '${a}' is named twice`);
      keys.push(a);
    } else {
      throw invalidArgument('groupBy: pass column names and at most one window(...)');
    }
  }
  return { keys, window: win };
}
