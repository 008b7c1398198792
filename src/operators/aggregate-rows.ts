import type { Aggregator } from '../plan/aggregates.js';
import type { GroupTable } from '../state/group-table.js';
import type { WindowSlab } from '../state/window-slab.js';
import type { Group } from './aggregate-codec.js';

/** An aggregation's output rows: grouping columns by name, the window, then the aggregates by name. */
export class ResultRows {
  constructor(
    private readonly keyColumns: readonly string[],
    private readonly windowed: boolean,
    private readonly names: readonly string[],
    private readonly aggregators: readonly Aggregator[],
  ) {}

  /** The row of a group of the groups store. */
  ofGroup(g: Group): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < this.keyColumns.length; i++) out[this.keyColumns[i]!] = g.keys[i];
    if (this.windowed) out.window = { start: g.start, end: g.end };
    for (let i = 0; i < this.names.length; i++)
      out[this.names[i]!] = this.aggregators[i]!.result(g.states[i]);
    return out;
  }

  /** The row of a group table's slot (one key column). */
  ofSlot(table: GroupTable, slab: WindowSlab, slot: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    out[this.keyColumns[0]!] = table.keyValue(slab.keyIds[slot]!);
    if (this.windowed) out.window = { start: slab.start, end: slab.end };
    for (let i = 0; i < this.names.length; i++)
      out[this.names[i]!] = this.aggregators[i]!.result(slab.states[i]![slot]);
    return out;
  }
}
