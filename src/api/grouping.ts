import { invalidArgument } from '../errors.js';
import { type AggregateSpec, isAggregateSpec } from '../plan/aggregates.js';
import type { AggregateNode, LogicalNode } from '../plan/nodes.js';
import { type AnyWindow, isWindow } from '../plan/window.js';

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

/** @internal The node of `input.groupBy(keys..., window?).agg(aggregates)`. */
export function aggregateNode(
  input: LogicalNode,
  keys: readonly string[],
  window: AnyWindow | undefined,
  aggregates: Record<string, AggregateSpec>,
): AggregateNode {
  if (typeof aggregates !== 'object' || aggregates === null)
    throw invalidArgument('agg({...}): name the aggregates');
  const list = Object.entries(aggregates).map(([name, spec]) => {
    if (!isAggregateSpec(spec))
      throw invalidArgument(`agg: '${name}' must be an aggregate such as agg.sum('amount')`);
    if (name === 'window' || keys.includes(name)) {
      throw invalidArgument(`agg: the output name '${name}' is already taken by a grouping column`);
    }
    return Object.freeze({ name, spec });
  });
  if (list.length === 0) throw invalidArgument('agg({...}): name at least one aggregate');
  return Object.freeze({
    kind: 'aggregate',
    input,
    keys,
    window,
    aggregates: Object.freeze(list),
    label: undefined,
  });
}
