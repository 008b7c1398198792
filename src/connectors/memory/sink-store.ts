import type { DriverRows, ProgramOutput, SinkEpoch } from '../contract.js';

/**
 * What a memory sink received, kept by the driver: per epoch, per partition, in emit order.
 * Readable while the query runs and after it stops.
 */
export class MemorySinkStore implements DriverRows, ProgramOutput {
  /** The program reads the rows (`q.sink(name)`). */
  readonly output: ProgramOutput = this;

  private readonly byEpoch = new Map<number, unknown[][]>();
  private readonly current: number[];
  private lastCommitted: number;

  /**
   * @param complete complete output mode: each batch is the whole result table.
   * @param firstEpoch the epoch this run starts at (after a resume, the one after the committed).
   */
  constructor(
    readonly name: string,
    private readonly partitions: number,
    private readonly complete = false,
    firstEpoch = 0,
  ) {
    this.current = new Array(partitions).fill(firstEpoch);
    this.lastCommitted = firstEpoch - 1;
  }

  /** Every partition passed the end of `epoch`, and the epoch is committed. */
  commitEpoch(epoch: number): void {
    this.lastCommitted = epoch;
  }

  /** The last committed epoch (−1: none). */
  get lastCommittedEpoch(): number {
    return this.lastCommitted;
  }

  /**
   * Takes the committed epochs of the run this one resumes (before any row arrives), so that the
   * sink shows one output across restarts, as a sink that outlives the query would. Epochs this
   * run will write again (the earlier run's uncommitted ones) are not taken.
   */
  carryCommitted(other: ProgramOutput): void {
    if (!(other instanceof MemorySinkStore)) return;
    const earlier = other;
    for (const [epoch, parts] of earlier.byEpoch) {
      if (epoch <= earlier.lastCommitted && epoch < this.current[0]!) {
        this.byEpoch.set(
          epoch,
          parts.map((rows) => [...rows]),
        );
      }
    }
  }

  row(partition: number, row: unknown): void {
    const epoch = this.current[partition]!;
    let parts = this.byEpoch.get(epoch);
    if (parts === undefined) {
      parts = Array.from({ length: this.partitions }, () => []);
      this.byEpoch.set(epoch, parts);
    }
    parts[partition]!.push(row);
  }

  /** The partition passed the barrier of `epoch`: its next rows belong to the next epoch. */
  endEpoch(partition: number, epoch: number): void {
    this.current[partition] = epoch + 1;
  }

  /**
   * Every row so far: epochs in order, and within an epoch partition 0 first, each in emit order.
   * In complete mode, the result table of the last committed batch (each batch is all of it).
   */
  rows<T = unknown>(): T[] {
    if (this.complete) return (this.byEpoch.get(this.lastCommitted)?.flat() ?? []) as T[];
    return this.epochs<T>().flatMap((e) => e.rows);
  }

  /** Rows grouped by epoch id (the last group may be the epoch still open). */
  epochs<T = unknown>(): SinkEpoch<T>[] {
    return [...this.byEpoch.keys()]
      .sort((a, b) => a - b)
      .map((epochId) => ({ epochId, rows: this.byEpoch.get(epochId)!.flat() as T[] }));
  }
}
