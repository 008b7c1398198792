import { readFile } from 'node:fs/promises';
import type { StaticTable } from '../api/join.js';
import { readRows } from '../connectors/files/formats.js';
import type { StaticJoinNode } from '../plan/nodes.js';
import { joinKeyOf } from './join-rows.js';

/** A static table's rows by join key (rows whose key is null are left out: they match nothing). */
export type StaticIndex = ReadonlyMap<string, readonly unknown[]>;

/** Loads a static join's table and indexes it by the join's key: once per worker thread. */
export async function loadStaticIndex(node: StaticJoinNode): Promise<StaticIndex> {
  const rows = await loadRows(node.table);
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

async function loadRows(table: StaticTable): Promise<Iterable<unknown>> {
  if (table.kind === 'function') {
    const rows = await table.load();
    if (rows == null || typeof (rows as Iterable<unknown>)[Symbol.iterator] !== 'function') {
      throw new TypeError('the static table function must return (or resolve to) an iterable of rows');
    }
    return rows;
  }
  if (table.format !== 'jsonArray') return readRows(table.path, table.format);
  const text = await readFile(table.path, 'utf8');
  let rows: unknown;
  try {
    rows = JSON.parse(text);
  } catch (e) {
    throw new Error(`${table.path}: not JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(rows)) throw new Error(`${table.path}: expected a JSON array of rows`);
  return rows;
}
