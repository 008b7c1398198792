/**
 * Checkpointed groups of a GroupTable on their way back in: the pieces of a restore applied in
 * file order — entries (last write wins), removals, evictions — before the surviving groups go
 * into their windows.
 */
import { ErrorCode, MillraceError } from '../errors.js';

/** The characters a key adds to its composite key (see compositeKey) after the window's prefix. */
export function keyTextChars(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (typeof v === 'number') return String(v).length;
  return JSON.stringify(v ?? null).length + 1;
}

/**
 * A group's key in checkpoints: its window start and key value, as an InMemoryStateStore of groups
 * keys it (`s<start>|<string>`, `n<start>|<number>`, JSON for other values). Key groups are those
 * of these keys whoever writes the file.
 */
export function compositeKey(start: number, v: unknown): string {
  if (typeof v === 'string') return `s${start}|${v}`;
  if (typeof v === 'number') return `n${start}|${v}`;
  return JSON.stringify([start, v ?? null]);
}

/** A group table's piece of entries (`T`), one array per field. */
export interface TableRows {
  readonly keyColumn: unknown[];
  readonly starts: number[];
  readonly ends: number[];
  readonly stateColumns: unknown[][];
}

/**
 * The entries of a `T` piece, `[keyColumn, windows, stateColumns]` with `windows` as runs
 * `[start, end, count, ...]`; throws CHECKPOINT_CORRUPT when they are not `count` entries.
 */
export function tableRows(data: unknown, count: number): TableRows {
  const [keyColumn, runs, stateColumns] = data as [unknown[], number[], unknown[][]];
  if (
    !Array.isArray(keyColumn) ||
    keyColumn.length !== count ||
    !Array.isArray(runs) ||
    !Array.isArray(stateColumns)
  ) {
    throw malformed(`a state file's table piece does not hold the ${count} entries it says`);
  }
  const starts = new Array<number>(count);
  const ends = new Array<number>(count);
  let at = 0;
  for (let r = 0; r + 2 < runs.length; r += 3) {
    for (let n = runs[r + 2]!; n > 0 && at < count; n--, at++) {
      starts[at] = runs[r]!;
      ends[at] = runs[r + 1]!;
    }
  }
  if (at !== count || stateColumns.some((c) => !Array.isArray(c) || c.length !== count)) {
    throw malformed(
      `a state file's table piece has windows or states that do not cover its ${count} entries`,
    );
  }
  return { keyColumn, starts, ends, stateColumns };
}

/** The staged groups of one window, by key: primitives by value, objects by their JSON. */
interface StagedWindow {
  readonly end: number;
  readonly keys: Map<unknown, number>;
  readonly objects: Map<string, number>;
}

/** Groups of a restore, staged by window and key: see the file comment. */
export class TableStaging {
  private readonly windows = new Map<number, StagedWindow>();
  /** Rows of the staged groups (rows overwritten or removed stay, unreferenced). */
  private readonly keyValues: unknown[] = [];
  private readonly states: unknown[][];

  constructor(
    private readonly aggregates: number,
    private readonly deserializers: readonly ((data: unknown) => unknown)[],
  ) {
    this.states = Array.from({ length: aggregates }, () => []);
  }

  /** A group table's entries (a `T` piece's values). */
  addTable(data: unknown, count: number): void {
    const rows = tableRows(data, count);
    if (rows.stateColumns.length !== this.aggregates) {
      throw malformed(
        `a state file's table piece holds ${rows.stateColumns.length} state columns, expected ${this.aggregates}`,
      );
    }
    this.addRows(rows);
  }

  /** A chunk of groups as groupCodec packs them: `[[keyColumn], starts, ends, [stateColumn, ...]]`. */
  addChunk(keys: readonly string[], data: unknown): void {
    const [keyColumns, starts, ends, stateColumns] = data as [unknown[][], number[], number[], unknown[][]];
    if (
      !Array.isArray(keyColumns) ||
      keyColumns.length !== 1 ||
      starts?.length !== keys.length ||
      ends?.length !== keys.length ||
      stateColumns?.length !== this.aggregates
    ) {
      throw malformed(
        `a state file's chunk of ${keys.length} groups does not hold one key column, their windows and ${this.aggregates} state columns`,
      );
    }
    this.addRows({ keyColumn: keyColumns[0]!, starts, ends, stateColumns });
  }

  /** Groups encoded one by one (format-1 files): `[[key], start, end, [state, ...]]` each. */
  addEntries(keys: readonly string[], values: readonly unknown[]): void {
    for (let i = 0; i < keys.length; i++) {
      const [keyValues, start, end, states] = values[i] as [unknown[], number, number, unknown[]];
      if (keyValues?.length !== 1 || states?.length !== this.aggregates) {
        throw malformed(`state entry '${keys[i]}' is not a group of one key and ${this.aggregates} states`);
      }
      const row = this.row(start, end, keyValues[0]);
      for (let c = 0; c < this.aggregates; c++) this.states[c]![row] = this.deserializers[c]!(states[c]);
    }
  }

  private addRows(rows: TableRows): void {
    const { keyColumn, starts, ends, stateColumns } = rows;
    for (let i = 0; i < keyColumn.length; i++) {
      const row = this.row(starts[i]!, ends[i]!, keyColumn[i]);
      for (let c = 0; c < this.aggregates; c++)
        this.states[c]![row] = this.deserializers[c]!(stateColumns[c]![i]);
    }
  }

  private row(start: number, end: number, v: unknown): number {
    let w = this.windows.get(start);
    if (w === undefined) {
      w = { end, keys: new Map(), objects: new Map() };
      this.windows.set(start, w);
    }
    const row = this.keyValues.length;
    this.keyValues.push(v);
    if (typeof v === 'object' && v !== null) w.objects.set(JSON.stringify(v), row);
    else w.keys.set(v === undefined ? null : v, row);
    return row;
  }

  /** Keys removed, by composite key (files written by an InMemoryStateStore of groups). */
  remove(keys: Iterable<string>): void {
    const gone = new Set(keys);
    if (gone.size === 0) return;
    for (const [start, w] of this.windows) {
      for (const [v, row] of w.keys) if (gone.has(compositeKey(start, this.keyValues[row]))) w.keys.delete(v);
      for (const [v, row] of w.objects)
        if (gone.has(compositeKey(start, this.keyValues[row]))) w.objects.delete(v);
    }
  }

  /** Every window ending at or before `watermark` is gone (an `X` piece). */
  evictUpTo(watermark: number): void {
    for (const [start, w] of this.windows) if (w.end <= watermark) this.windows.delete(start);
  }

  /** Hands every surviving group over (`states` is reused between calls). */
  apply(group: (v: unknown, start: number, end: number, states: readonly unknown[]) => void): void {
    const states = new Array<unknown>(this.aggregates);
    for (const [start, w] of this.windows) {
      for (const rows of [w.keys, w.objects]) {
        for (const row of rows.values()) {
          for (let c = 0; c < this.aggregates; c++) states[c] = this.states[c]![row];
          group(this.keyValues[row], start, w.end, states);
        }
      }
    }
  }
}

/** A piece of a state file that passed its checksum and still holds other than groups of this table. */
function malformed(what: string): MillraceError {
  return new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, what);
}
