import type { OperatorContext, OperatorRef } from '../../operators/contract.js';
import { keyHasher } from '../../plan/partitioner.js';
import type { StageOutput } from '../../plan/physical.js';
import type { RingProducer } from '../channel/spsc-ring.js';
import { originArg, type RowMeta } from './row-meta.js';
import { type TaskOutput, WriterSet } from './task-output.js';

/**
 * A row with only `columns` (the ones the next stage reads), as a new plain object; a column the
 * row lacks stays absent. A value that is not an object is passed as it is.
 */
export function projectColumns(row: unknown, columns: readonly string[]): unknown {
  if (typeof row !== 'object' || row === null) return row;
  const from = row as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const v = from[c];
    if (v !== undefined) out[c] = v;
  }
  return out;
}

/**
 * Hash-partitions rows over the next stage: `stableHash(key) % partitions` picks the ring. Rows of
 * one key always take the same ring, so their order is kept. With `columns`, a row crosses with
 * only those (the next stage reads nothing else): less to encode, copy and decode.
 */
export class ShuffleOutput implements TaskOutput {
  private readonly set: WriterSet;
  private readonly hash: (row: unknown) => number;
  private readonly n: number;
  /** Forward partitioning: every row goes to this partition. */
  private readonly forwardTo: number;
  private readonly op: OperatorRef;
  private readonly columns: readonly string[] | null;

  constructor(
    rings: readonly RingProducer[],
    output: Extract<StageOutput, { kind: 'shuffle' }>,
    producerPartition: number,
    private readonly meta: RowMeta,
    private readonly ctx: OperatorContext,
  ) {
    this.set = new WriterSet(rings);
    this.hash = keyHasher(output.key);
    this.n = rings.length;
    this.forwardTo = output.partitioning === 'forward' ? producerPartition % this.n : -1;
    this.op = output.operator;
    this.columns = output.columns;
  }

  push(row: unknown): void {
    const m = this.meta;
    if (this.forwardTo >= 0) {
      this.set.writers[this.forwardTo]!.writeData(row, originArg(m), m.sourceTime, m.readTime, m.origin);
      return;
    }
    let h: number;
    try {
      h = this.hash(row);
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return;
    }
    const out = this.columns === null ? row : projectColumns(row, this.columns);
    this.set.writers[h % this.n]!.writeData(out, originArg(m), m.sourceTime, m.readTime, m.origin);
  }

  marker(kind: number, value: number, arg = 0): void {
    this.set.marker(kind, value, arg);
  }

  get blocked(): boolean {
    return this.set.blocked;
  }

  flush(): boolean {
    return this.set.flush();
  }

  publish(): void {
    this.set.publish();
  }
}
