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

/**
 * The rows an operator holds until they go out in a batch, with their metadata as in
 * {@link HeldRows}. Its arrays are kept from batch to batch (a batch takes copies of its entries):
 * made again for every batch, they were most of what an Arrow operator allocated per row.
 */
export class RowQueue {
  private readonly rows: unknown[] = [];
  private readonly sourceTime: number[] = [];
  private readonly readTime: number[] = [];
  private readonly origin: number[] = [];
  private readonly source: number[] = [];
  private n = 0;

  get length(): number {
    return this.n;
  }

  add(row: unknown, m: RowMetaFields): void {
    const i = this.n++;
    this.rows[i] = row;
    this.sourceTime[i] = m.sourceTime;
    this.readTime[i] = m.readTime;
    this.origin[i] = m.origin;
    this.source[i] = (m.sourceIndex << 16) | m.sourcePartition;
  }

  /** The first `n` rows, taken out. */
  take(n: number): HeldRows {
    const k = Math.min(n, this.n);
    const out = new HeldRows(
      this.rows.slice(0, k),
      this.sourceTime.slice(0, k),
      this.readTime.slice(0, k),
      this.origin.slice(0, k),
      this.source.slice(0, k),
    );
    const rest = this.n - k;
    if (rest > 0) {
      this.rows.copyWithin(0, k, this.n);
      this.sourceTime.copyWithin(0, k, this.n);
      this.readTime.copyWithin(0, k, this.n);
      this.origin.copyWithin(0, k, this.n);
      this.source.copyWithin(0, k, this.n);
    }
    // The rows gone hold no reference here.
    this.rows.fill(undefined, rest, this.n);
    this.n = rest;
    return out;
  }

  /** Puts `held` back in front (a batch that must be sent in smaller parts). */
  putBack(held: HeldRows): void {
    const waiting = this.take(this.n);
    const m: RowMetaFields = { sourceTime: 0, readTime: 0, origin: 0, sourceIndex: 0, sourcePartition: 0 };
    for (const part of [held, waiting]) {
      for (let i = 0; i < part.length; i++) {
        part.restore(i, m);
        this.add(part.rows[i], m);
      }
    }
  }
}
