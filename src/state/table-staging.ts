/**
 * Checkpointed groups of a GroupTable on their way back in: the entries and removals of a restore
 * applied in file order, by composite key, before the surviving groups go into their windows.
 */

/**
 * A group's key in checkpoints: its window start and key value, as an InMemoryStateStore of groups
 * keys it (`s<start>|<string>`, `n<start>|<number>`, JSON for other values), so both write the
 * same files.
 */
export function compositeKey(start: number, v: unknown): string {
  if (typeof v === 'string') return `s${start}|${v}`;
  if (typeof v === 'number') return `n${start}|${v}`;
  return JSON.stringify([start, v ?? null]);
}

/** Entries of a restore, last write wins, removals forget: see the file comment. */
export class TableStaging {
  /** Composite key → row of the columns below (rows overwritten or removed stay, unreferenced). */
  private readonly at = new Map<string, number>();
  private readonly keyValues: unknown[] = [];
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly states: unknown[][];

  constructor(
    private readonly aggregates: number,
    private readonly deserializers: readonly ((data: unknown) => unknown)[],
  ) {
    this.states = Array.from({ length: aggregates }, () => []);
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
      throw new Error(
        `a state chunk of ${keys.length} groups does not hold one key column, their windows and ${this.aggregates} state columns`,
      );
    }
    const column = keyColumns[0]!;
    for (let i = 0; i < keys.length; i++) {
      const row = this.row(keys[i]!, column[i], starts[i]!, ends[i]!);
      for (let c = 0; c < this.aggregates; c++)
        this.states[c]![row] = this.deserializers[c]!(stateColumns[c]![i]);
    }
  }

  /** Groups encoded one by one (format-1 files): `[[key], start, end, [state, ...]]` each. */
  addEntries(keys: readonly string[], values: readonly unknown[]): void {
    for (let i = 0; i < keys.length; i++) {
      const [keyValues, start, end, states] = values[i] as [unknown[], number, number, unknown[]];
      if (keyValues?.length !== 1 || states?.length !== this.aggregates) {
        throw new Error(`state entry '${keys[i]}' is not a group of one key and ${this.aggregates} states`);
      }
      const row = this.row(keys[i]!, keyValues[0], start, end);
      for (let c = 0; c < this.aggregates; c++) this.states[c]![row] = this.deserializers[c]!(states[c]);
    }
  }

  private row(key: string, v: unknown, start: number, end: number): number {
    const row = this.starts.length;
    this.at.set(key, row);
    this.keyValues.push(v);
    this.starts.push(start);
    this.ends.push(end);
    return row;
  }

  remove(keys: Iterable<string>): void {
    for (const key of keys) this.at.delete(key);
  }

  /** Hands every surviving group over (`states` is reused between calls). */
  apply(
    group: (key: string, v: unknown, start: number, end: number, states: readonly unknown[]) => void,
  ): void {
    const states = new Array<unknown>(this.aggregates);
    for (const [key, row] of this.at) {
      for (let c = 0; c < this.aggregates; c++) states[c] = this.states[c]![row];
      group(key, this.keyValues[row], this.starts[row]!, this.ends[row]!, states);
    }
  }
}
