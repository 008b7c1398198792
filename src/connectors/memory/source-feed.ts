import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import type { DriverFeed, FeedContext, FeedPort, ProgramInput } from '../contract.js';
import { FeedCursor } from '../feed-cursor.js';
import type { MemorySourceSpec } from '../spec.js';

/**
 * The test's handle on a memory source: a replayable log per partition, sent to the partition's
 * source task as its ring takes the rows (at once in real-time mode, when a batch takes them in
 * micro-batch mode). Rows that wait stay in the log only: a query far behind its source holds no
 * second copy of them.
 */
export class MemorySourceFeed implements DriverFeed, ProgramInput {
  private readonly logs: unknown[][];
  private readonly addedAt: number[][];
  readonly cursors: readonly FeedCursor[];
  /** Called after rows are added (micro-batch triggers react to new data). */
  onData: (() => void) | undefined;

  private readonly writers: readonly FeedPort[];
  private readonly now: () => number;
  /** The program feeds this source (`q.source(name)`). */
  readonly input: ProgramInput = this;

  constructor(
    readonly spec: MemorySourceSpec,
    context: FeedContext,
  ) {
    this.writers = context.ports;
    this.now = context.now;
    this.logs = this.writers.map(() => []);
    this.addedAt = this.writers.map(() => []);
    this.cursors = this.writers.map(
      (w, p) =>
        new FeedCursor(w, {
          available: () => this.logs[p]!.length,
          write: (port, offset) => port.row(this.logs[p]![offset], offset, this.addedAt[p]![offset]!),
        }),
    );
  }

  get name(): string {
    return this.spec.name;
  }

  get partitions(): number {
    return this.spec.partitions;
  }

  /**
   * Appends rows to a partition's log. In real-time mode they go to its task at once (as fast as
   * its ring takes them); in micro-batch mode the next batch takes them. A row that cannot be sent
   * (not encodable, larger than a ring) is refused with the rows after it; those before it are
   * added. Returns the new end offset.
   */
  addData(rows: Iterable<unknown>, partition = 0): number {
    this.checkArgs(rows, partition);
    const log = this.logs[partition]!;
    const cursor = this.cursors[partition]!;
    const writer = this.writers[partition]!;
    const now = this.now();
    try {
      for (const row of rows) {
        const offset = log.length;
        // A row the ring takes now is checked by writing it; one that waits, before it waits.
        if (!(cursor.live && !writer.blocked && cursor.sent === offset))
          this.check(writer, row, offset, partition);
        log.push(row);
        this.addedAt[partition]!.push(now);
        if (cursor.live) this.send(cursor, offset, partition);
      }
    } finally {
      // Rows go one at a time; the task hears once, after the last, whether the partition caught up.
      if (cursor.live) cursor.pump();
      writer.publish();
      this.onData?.();
    }
    return log.length;
  }

  private check(writer: FeedPort, row: unknown, offset: number, partition: number): void {
    try {
      writer.check(row);
    } catch (cause) {
      throw this.notAdded(cause, offset, partition);
    }
  }

  /** Sends what the ring takes; a row it refuses is taken out of the log again, with the rows after it. */
  private send(cursor: FeedCursor, offset: number, partition: number): void {
    try {
      cursor.pump(false);
    } catch (cause) {
      this.logs[partition]!.length = cursor.sent;
      this.addedAt[partition]!.length = cursor.sent;
      throw this.notAdded(cause, offset, partition);
    }
  }

  private notAdded(cause: unknown, offset: number, partition: number): MillraceError {
    const code = cause instanceof MillraceError ? cause.code : ErrorCode.RECORD_NOT_ENCODABLE;
    return new MillraceError(
      code,
      `addData: row ${offset} of source '${this.spec.name}' (partition ${partition}) was not added: ${(cause as Error).message}`,
      { cause },
    );
  }

  private checkArgs(rows: Iterable<unknown>, partition: number): void {
    if (!Number.isInteger(partition) || partition < 0 || partition >= this.logs.length) {
      throw invalidArgument(
        `addData: source '${this.spec.name}' has ${this.logs.length} partition(s); partition ${partition} does not exist`,
      );
    }
    if (rows == null || typeof (rows as Iterable<unknown>)[Symbol.iterator] !== 'function') {
      throw invalidArgument(`addData: rows must be an array (or iterable) of rows`);
    }
  }

  /** Ends epoch `epoch` at `end` on a partition: its rows up to `end` are sent, then the batch's marker. */
  endAt(partition: number, epoch: number, end: number): void {
    const cursor = this.cursors[partition]!;
    // A log that was not handed over from an earlier run holds fewer rows than that run read.
    const upTo = Math.min(end, Math.max(cursor.sent, this.logs[partition]!.length));
    cursor.endEpochAt(upTo, epoch, end);
    cursor.sendUpTo(upTo);
  }

  /**
   * Appends rows to a partition's log without sending them (rows a query starts with). Before
   * {@link resumeAt}, they are the log from offset 0.
   */
  preload(rows: Iterable<unknown>, partition = 0): void {
    this.checkArgs(rows, partition);
    const now = this.now();
    for (const row of rows) {
      this.logs[partition]!.push(row);
      this.addedAt[partition]!.push(now);
    }
  }

  /**
   * A resumed run: rows before these offsets were processed by an earlier run and are not sent
   * again. Where the log holds fewer rows than that (an earlier run's rows were not handed to
   * this one), the rows added next take the offsets after the committed ones.
   */
  resumeAt(offsets: readonly number[]): void {
    for (let p = 0; p < this.logs.length; p++) {
      const at = offsets[p] ?? 0;
      if (this.logs[p]!.length < at) {
        this.logs[p]!.length = at;
        this.addedAt[p]!.length = at;
      }
      this.cursors[p]!.skipTo(at);
    }
  }

  /** Real-time mode: every row of the log not sent yet goes to its task, and rows added later too. */
  feedAll(): void {
    for (const c of this.cursors) c.sendUpTo(Number.POSITIVE_INFINITY);
  }

  /** Every partition's log so far (a resumed run can be handed them; rows before a resume point may be holes). */
  snapshot(): unknown[][] {
    return this.logs.map((l) => Array.from(l));
  }

  /** Rows added so far, per partition. */
  latestOffsets(): number[] {
    return this.logs.map((l) => l.length);
  }
}
