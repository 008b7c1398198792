import type { OperatorContext, OperatorRef } from '../../operators/contract.js';
import type { KeySpec } from '../../plan/nodes.js';
import type { RingProducer } from '../channel/spsc-ring.js';
import { keyHasher } from '../partitioner.js';
import { originArg, type RowMeta } from './row-meta.js';
import { type TaskOutput, WriterSet } from './task-output.js';

/**
 * Hash-partitions rows over the next stage: `stableHash(key) % partitions` picks the ring. Rows of
 * one key always take the same ring, so their order is kept.
 */
export class ShuffleOutput implements TaskOutput {
  private readonly set: WriterSet;
  private readonly hash: (row: unknown) => number;
  private readonly n: number;
  /** Forward partitioning: every row goes to this partition. */
  private readonly forwardTo: number;

  constructor(
    rings: readonly RingProducer[],
    key: KeySpec,
    partitioning: 'hash' | 'forward',
    producerPartition: number,
    private readonly op: OperatorRef,
    private readonly meta: RowMeta,
    private readonly ctx: OperatorContext,
  ) {
    this.set = new WriterSet(rings);
    this.hash = keyHasher(key);
    this.n = rings.length;
    this.forwardTo = partitioning === 'forward' ? producerPartition % this.n : -1;
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
    this.set.writers[h % this.n]!.writeData(row, originArg(m), m.sourceTime, m.readTime, m.origin);
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
