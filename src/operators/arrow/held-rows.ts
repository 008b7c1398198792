import type { RowMetaFields } from '../contract.js';

/**
 * Rows an operator holds, each with the metadata the task had for it (source time, for the
 * end-to-end latency the sink records; origin, for errors and dead letters), column-wise.
 */
export class HeldRows {
  rows: unknown[] = [];
  private sourceTime: number[] = [];
  private readTime: number[] = [];
  private origin: number[] = [];
  private source: number[] = [];

  get length(): number {
    return this.rows.length;
  }

  add(row: unknown, m: RowMetaFields): void {
    this.rows.push(row);
    this.sourceTime.push(m.sourceTime);
    this.readTime.push(m.readTime);
    this.origin.push(m.origin);
    this.source.push((m.sourceIndex << 16) | m.sourcePartition);
  }

  /** Sets the task's metadata to row `i`'s. */
  restore(i: number, m: RowMetaFields): void {
    m.sourceTime = this.sourceTime[i]!;
    m.readTime = this.readTime[i]!;
    m.origin = this.origin[i]!;
    const s = this.source[i]!;
    m.sourceIndex = s >>> 16;
    m.sourcePartition = s & 0xffff;
  }

  /** Moves the first `n` rows into a new HeldRows. */
  take(n: number): HeldRows {
    const out = new HeldRows();
    if (n >= this.rows.length) {
      [out.rows, this.rows] = [this.rows, []];
      [out.sourceTime, this.sourceTime] = [this.sourceTime, []];
      [out.readTime, this.readTime] = [this.readTime, []];
      [out.origin, this.origin] = [this.origin, []];
      [out.source, this.source] = [this.source, []];
      return out;
    }
    out.rows = this.rows.splice(0, n);
    out.sourceTime = this.sourceTime.splice(0, n);
    out.readTime = this.readTime.splice(0, n);
    out.origin = this.origin.splice(0, n);
    out.source = this.source.splice(0, n);
    return out;
  }

  /** Puts `held` back in front (a batch that must be sent in smaller parts). */
  putBack(held: HeldRows): void {
    this.rows = held.rows.concat(this.rows);
    this.sourceTime = held.sourceTime.concat(this.sourceTime);
    this.readTime = held.readTime.concat(this.readTime);
    this.origin = held.origin.concat(this.origin);
    this.source = held.source.concat(this.source);
  }

  /** Only the rows at `indices`, in order. */
  pick(indices: readonly number[]): HeldRows {
    const out = new HeldRows();
    out.rows = indices.map((i) => this.rows[i]);
    out.sourceTime = indices.map((i) => this.sourceTime[i]!);
    out.readTime = indices.map((i) => this.readTime[i]!);
    out.origin = indices.map((i) => this.origin[i]!);
    out.source = indices.map((i) => this.source[i]!);
    return out;
  }
}

/** Runs `fn` with the task's metadata set to held row `i`'s, and puts the task's back after. */
export function asHeldRow(held: HeldRows, i: number, m: RowMetaFields, fn: () => void): void {
  const { sourceTime, readTime, origin, sourceIndex, sourcePartition } = m;
  held.restore(i, m);
  try {
    fn();
  } finally {
    m.sourceTime = sourceTime;
    m.readTime = readTime;
    m.origin = origin;
    m.sourceIndex = sourceIndex;
    m.sourcePartition = sourcePartition;
  }
}
