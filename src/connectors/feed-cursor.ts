import type { FeedCursorPort, FeedMarker, FeedPort } from './contract.js';

/** Where a {@link FeedCursor}'s rows come from. */
export interface CursorRows {
  /** The end of the rows that can be written now, from the cursor's position on (offsets). */
  available(): number;
  /**
   * Writes the row at `offset` to `port`; returns what the port returned: false when the frame had
   * to wait for space.
   */
  write(port: FeedPort, offset: number): boolean;
  /** The cursor wants rows from `offset` on that are not available yet (a file to load). */
  need?(offset: number): void;
  /** Whether rows exist past {@link available} that are still being read (a file not loaded yet). */
  pending?(): boolean;
}

/** A marker to write once every row before `after` is written: the engine's, or an epoch's end. */
interface QueuedMarker {
  readonly after: number;
  readonly marker: FeedMarker | null;
  readonly epoch: number;
  readonly end: number;
}

/**
 * The driver's sending end of one source partition whose rows it holds (a memory source's log, a
 * files source's files): rows go to the partition's feed ring only as fast as the ring takes them.
 * When the ring is full the port queues one frame and the cursor stops; the driver's pump calls
 * {@link pump} again when the ring has drained (the source task's reads ring the driver's bell).
 * So at most one row per partition waits outside the ring, however far ahead of the query the
 * source is — backpressure reaches the reader, and memory stays bounded.
 *
 * Markers keep their place among the rows: one placed at an offset is written once the rows before
 * it are, and before any row after it.
 *
 * ```
 *   sent          target (micro-batch: the batch's end; real-time: everything)
 *    │               │
 *  ──┼───────────────┼──►  offsets
 *    └ next row to write: only while the port is not blocked
 * ```
 */
export class FeedCursor implements FeedCursorPort {
  /** The next offset to write (rows before it are in the ring, or the one frame the port queued). */
  sent = 0;
  /** Rows are written up to this offset (exclusive). */
  private target = 0;
  /** Markers waiting for rows before them, by offset (equal offsets in the order they came). */
  private readonly markers: QueuedMarker[] = [];
  /** End of stream was written: nothing more is. */
  private ended = false;
  /** The last marker is being written. */
  private ending = false;
  /** What the task was told of the backlog (it starts out taking the partition for behind). */
  private toldBehind = true;

  constructor(
    private readonly port: FeedPort,
    private readonly rows: CursorRows,
  ) {}

  /** Rows before `offset` are not written (a resumed run: they were committed). */
  skipTo(offset: number): void {
    if (offset > this.sent) this.sent = offset;
  }

  /** Rows are written up to `offset` (exclusive) as the ring takes them; `Infinity`: all there are. */
  sendUpTo(offset: number): void {
    if (offset > this.target) this.target = offset;
    this.pump();
  }

  /** Whether rows are to be written as they arrive (real-time mode, once the run has placed its redo). */
  get live(): boolean {
    return this.target === Number.POSITIVE_INFINITY;
  }

  /** The engine's marker at `offset`: written after the rows before it, before the rows from it on. */
  markAt(offset: number, marker: FeedMarker): void {
    this.queue({ after: offset, marker, epoch: 0, end: 0 });
  }

  /** Epoch `epoch` ends at `end`, written once the rows before `upTo` are. */
  endEpochAt(upTo: number, epoch: number, end: number): void {
    this.queue({ after: upTo, marker: null, epoch, end });
  }

  private queue(m: QueuedMarker): void {
    if (this.ended) return;
    const q = this.markers;
    let i = q.length;
    while (i > 0 && q[i - 1]!.after > m.after) i--;
    q.splice(i, 0, m);
    this.pump();
  }

  /** The last marker: rows not written by now are left for the next run (they are replayable). */
  end(marker: FeedMarker): void {
    // Nothing follows the last marker, not even what the cursor says of its backlog.
    this.ending = true;
    this.markAt(this.sent, marker);
    this.ended = true;
    this.target = this.sent;
  }

  /** Frames written and waiting for space in the ring (one row at most, and markers). */
  get queuedFrames(): number {
    return this.port.pendingFrames;
  }

  /** Whether rows wait that the ring could take once it has space, or the task is to hear it caught up. */
  get waiting(): boolean {
    return (
      this.markers.length > 0 ||
      (this.sent < this.target && this.sent < this.rows.available()) ||
      (this.toldBehind && !this.ending && !this.behind())
    );
  }

  /**
   * Writes what it may: markers that are due, and rows while the port takes them; then, with
   * `settle` and room in the ring, tells the task when it has caught up (a caller sending rows one
   * at a time settles after the last, so the task hears of it once).
   */
  pump(settle = true): void {
    const w = this.port;
    const q = this.markers;
    for (;;) {
      const m = q[0];
      if (m !== undefined && m.after <= this.sent) {
        q.shift();
        // A partition that has sent every row says so before the marker (a flush probe must not
        // overtake the report that it caught up).
        if (!this.ending && !this.behind()) this.tellBacklog(false);
        if (m.marker !== null) w.marker(m.marker);
        else w.endEpoch(m.epoch, m.end);
        continue;
      }
      if (w.blocked) break;
      const end = m === undefined ? this.target : Math.min(this.target, m.after);
      if (this.sent >= end) break;
      const available = this.rows.available();
      if (this.sent >= available) {
        this.rows.need?.(this.sent);
        break;
      }
      const stop = Math.min(end, available);
      if (!this.ending) this.tellBacklog(true);
      while (this.sent < stop) {
        const offset = this.sent;
        const fitted = this.rows.write(w, offset);
        this.sent = offset + 1;
        if (!fitted) break;
      }
    }
    // Told only with room in the ring: a frame waiting outside it is the row, never this. The
    // engine pumps again once the ring drains (see waiting).
    if (settle && !this.ending && !w.blocked) this.tellBacklog(this.behind());
    w.publish();
  }

  /** Rows exist that are not in the ring yet. */
  private behind(): boolean {
    return this.sent < this.rows.available() || this.rows.pending?.() === true;
  }

  /** Tells the task whether rows wait that it has not been sent (only when that changed). */
  private tellBacklog(behind: boolean): void {
    if (behind === this.toldBehind) return;
    this.toldBehind = behind;
    this.port.backlog(behind);
  }
}
