import type { RowMetaFields } from '../contract.js';

/**
 * Rows an operator holds, each with the metadata the task had for it (source time, for the
 * end-to-end latency the sink records; origin, for errors and dead letters), column-wise.
 */
export class HeldRows {
  constructor(
    public rows: unknown[] = [],
    private sourceTime: number[] = [],
    private readTime: number[] = [],
    private origin: number[] = [],
    private source: number[] = [],
  ) {}

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
    if (n >= this.rows.length) {
      // All of them (the usual case): the arrays move, and this one starts new ones.
      const out = new HeldRows(this.rows, this.sourceTime, this.readTime, this.origin, this.source);
      this.rows = [];
      this.sourceTime = [];
      this.readTime = [];
      this.origin = [];
      this.source = [];
      return out;
    }
    return new HeldRows(
      this.rows.splice(0, n),
      this.sourceTime.splice(0, n),
      this.readTime.splice(0, n),
      this.origin.splice(0, n),
      this.source.splice(0, n),
    );
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
    return new HeldRows(
      indices.map((i) => this.rows[i]),
      indices.map((i) => this.sourceTime[i]!),
      indices.map((i) => this.readTime[i]!),
      indices.map((i) => this.origin[i]!),
      indices.map((i) => this.source[i]!),
    );
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
