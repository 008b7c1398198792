import { ErrorCode, MillraceError } from '../errors.js';
import type { Aggregator } from '../plan/aggregates.js';
import type { StateCodec } from '../state/store-contract.js';
import { compositeKey } from '../state/table-staging.js';

/** One group's state: its key values, its window, and one accumulator state per aggregate. */
export interface Group {
  keys: unknown[];
  start: number;
  end: number;
  states: unknown[];
}

/**
 * A group's key in the groups store: its window start and key values (the group table's composite
 * key for one column, see compositeKey; JSON for several).
 */
export function groupStoreKey(keys: readonly unknown[], start: number): string {
  if (keys.length === 1) return compositeKey(start, keys[0]);
  return JSON.stringify([start, ...keys.map((k) => k ?? null)]);
}

/** Store key of a session: its group (keyed with start 0) and its start. */
export function sessionKey(group: string, start: number): string {
  return `${group}@${start}`;
}

/** Per aggregator, a state as checkpoint data: its `serialize`, or a deep copy (states may be updated in place). */
export function stateSerializers(aggregators: readonly Aggregator[]): ((state: unknown) => unknown)[] {
  return aggregators.map((a) => a.serialize?.bind(a) ?? ((s: unknown) => structuredClone(s)));
}

/** Per aggregator, checkpoint data back as a state: its `deserialize`, or the data as it is. */
export function stateDeserializers(aggregators: readonly Aggregator[]): ((data: unknown) => unknown)[] {
  return aggregators.map((a) => a.deserialize?.bind(a) ?? ((d: unknown) => d));
}

/**
 * A group as checkpoint data: `[keys, start, end, states]`, each state through its aggregator's
 * `serialize` (a deep copy when it has none: states may be updated in place). A chunk of them is
 * written as columns, `[[keyColumn, ...], starts, ends, [stateColumn, ...]]`: a restore decodes a
 * few arrays per chunk instead of four per group, then builds each group once.
 */
export function groupCodec(aggregators: readonly Aggregator[]): StateCodec<Group> {
  const out = stateSerializers(aggregators);
  const back = stateDeserializers(aggregators);
  const decodeStates = (states: unknown[]) => states.map((s, i) => back[i]!(s));
  return {
    encode: (g) => [g.keys, g.start, g.end, g.states.map((s, i) => out[i]!(s))],
    decode: (d) => {
      const [keys, start, end, states] = d as [unknown[], number, number, unknown[]];
      return { keys, start, end, states: decodeStates(states) };
    },
    chunkEncoder: () => {
      const keyColumns: unknown[][] = [];
      const starts: number[] = [];
      const ends: number[] = [];
      const stateColumns: unknown[][] = out.map(() => []);
      return {
        add: (g) => {
          // Key values never change; states are copied by their serialize.
          const keys = g.keys;
          while (keyColumns.length < keys.length) keyColumns.push([]);
          for (let c = 0; c < keys.length; c++) keyColumns[c]!.push(keys[c]);
          starts.push(g.start);
          ends.push(g.end);
          const states = g.states;
          for (let c = 0; c < stateColumns.length; c++) stateColumns[c]!.push(out[c]!(states[c]));
        },
        finish: () => [keyColumns, starts, ends, stateColumns],
      };
    },
    decodeChunk: (data, count) => {
      const [keyColumns, starts, ends, stateColumns] = data as [unknown[][], number[], number[], unknown[][]];
      if (starts.length !== count || stateColumns.length !== back.length) {
        throw new MillraceError(
          ErrorCode.CHECKPOINT_CORRUPT,
          `a state file's chunk holds ${starts.length} groups of ${stateColumns.length} states, expected ${count} of ${back.length}`,
        );
      }
      const groups = new Array<Group>(count);
      const nk = keyColumns.length;
      const ns = stateColumns.length;
      // One key and one aggregate (the common case) build their arrays as literals.
      const k0 = keyColumns[0];
      const s0 = stateColumns[0];
      const back0 = back[0];
      for (let i = 0; i < count; i++) {
        let keys: unknown[];
        if (nk === 1) keys = [k0![i]];
        else {
          keys = [];
          for (let c = 0; c < nk; c++) keys.push(keyColumns[c]![i]);
        }
        let states: unknown[];
        if (ns === 1) states = [back0!(s0![i])];
        else {
          states = [];
          for (let c = 0; c < ns; c++) states.push(back[c]!(stateColumns[c]![i]));
        }
        groups[i] = { keys, start: starts[i]!, end: ends[i]!, states };
      }
      return groups;
    },
  };
}
