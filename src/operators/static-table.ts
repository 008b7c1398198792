import type { StaticJoinNode } from '../plan/nodes.js';
import type { StaticIndex } from './contract.js';
import { joinKeyOf } from './join-rows.js';

/**
 * Indexes a static join's table by the join's key: once per worker thread, with the rows the
 * runtime loaded (`runtime/worker/static-tables.ts`).
 */
export function indexStaticTable(node: StaticJoinNode, rows: Iterable<unknown>): StaticIndex {
  const key = joinKeyOf(node.keys);
  const index = new Map<string, unknown[]>();
  for (const row of rows) {
    const k = key(row);
    if (k === null) continue;
    const list = index.get(k);
    if (list === undefined) index.set(k, [row]);
    else list.push(row);
  }
  return index;
}
