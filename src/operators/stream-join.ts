import type { PlannedOperator } from '../plan/analyze.js';
import { InMemoryStateStore } from '../state/state-store.js';
import type { StateCodec } from '../state/store-contract.js';
import { TimeIndex } from '../state/time-index.js';
import type { OperatorContext, RowSink, StateOperatorCounters, TwoInputOperator } from './contract.js';
import { JoinEmitter, joinKeyOf } from './join-rows.js';
import { rowTime } from './row-time.js';

const LEFT = 0;
const RIGHT = 1;
type Side = typeof LEFT | typeof RIGHT;

/** A buffered row of one side. Its store key is `id` (`L<n>` / `R<n>`, unique in the partition). */
interface Buffered {
  id: string;
  side: Side;
  /** Join key string (joinKeyOf). */
  key: string;
  /** Event time (ms). */
  t: number;
  row: unknown;
  /** It has joined at least once (tracked for an outer side only). */
  matched: boolean;
}

/** Checkpoint data of a buffered row: `[side, key, t, row, matched]`; the id is its store key. */
const bufferedCodec: StateCodec<Buffered> = {
  encode: (b) => [b.side, b.key, b.t, b.row, b.matched],
  decode: (d) => {
    const [side, key, t, row, matched] = d as [Side, string, number, unknown, boolean];
    return { id: '', side, key, t, row, matched };
  },
};

/** Routes the rows of one stage input to its side of the join. */
class JoinInput implements RowSink {
  constructor(
    private readonly join: StreamJoinOperator,
    private readonly side: Side,
  ) {}

  push(row: unknown): void {
    this.join.add(this.side, row);
  }
}

/**
 * A stream–stream join (a symmetric hash join). Each row is matched against the other side's rows
 * buffered under its key, then buffered itself. With the range condition
 * `r ∈ [l + lower, l + upper]` and W the watermark in force (rows at or below it are late and
 * dropped, so every later row has time > W):
 *
 * - a left row at time l can match no later right row once `l + upper <= W`;
 * - a right row at time r can match no later left row once `r - lower <= W`.
 *
 * At that point the row is evicted from state — and, on the outer side of an outer join, emitted
 * with the other side missing if it never matched. A row that is already past that point when it
 * arrives (or whose key is null) is matched against the buffer and never stored.
 */
export class StreamJoinOperator implements TwoInputOperator {
  readonly stateful = true;
  readonly store = new InMemoryStateStore<Buffered>(96, bufferedCodec);
  readonly inputs: readonly [RowSink, RowSink];
  private readonly key: (row: unknown) => string | null;
  private readonly columns: readonly [string, string];
  private readonly lower: number;
  private readonly upper: number;
  /** Which sides emit their unmatched rows. */
  private readonly outer: readonly [boolean, boolean];
  /** Per side: buffered rows by join key, in arrival order. */
  private readonly buffers: [Map<string, Buffered[]>, Map<string, Buffered[]>] = [new Map(), new Map()];
  /** Buffered rows by the watermark that evicts them. */
  private readonly evictions = new TimeIndex();
  private readonly out: JoinEmitter;
  private seq = 0;
  private dropped = 0;

  constructor(
    private readonly op: PlannedOperator<'streamJoin'>,
    next: RowSink,
    private readonly ctx: OperatorContext,
  ) {
    const { keys, range, type, combine } = op.node;
    this.key = joinKeyOf(keys);
    this.columns = [range.leftColumn, range.rightColumn];
    this.lower = range.lowerMs;
    this.upper = range.upperMs;
    this.outer = [type === 'leftOuter', type === 'rightOuter'];
    this.out = new JoinEmitter(op, combine, next, ctx);
    this.inputs = [new JoinInput(this, LEFT), new JoinInput(this, RIGHT)];
  }

  /** A row of the left input (the task routes each input's rows through `inputs`). */
  push(row: unknown): void {
    this.add(LEFT, row);
  }

  /** @internal A row of one side. */
  add(side: Side, row: unknown): void {
    const column = this.columns[side];
    const t = rowTime(row, column, this.op, this.ctx, 'join time');
    if (Number.isNaN(t)) return;
    if (t <= this.ctx.lateWatermark()) {
      this.dropped++;
      this.ctx.lateRow(this.op, row);
      return;
    }
    const entry: Buffered = { id: '', side, key: '', t, row, matched: false };
    const key = this.key(row);
    if (key !== null) {
      entry.key = key;
      this.match(entry);
    }
    const evictAt = side === LEFT ? t + this.upper : t - this.lower;
    if (key === null || evictAt <= this.ctx.watermark()) {
      this.retire(entry);
      return;
    }
    entry.id = `${side === LEFT ? 'L' : 'R'}${this.seq++}`;
    this.store.put(entry.id, entry);
    this.buffer(entry);
    this.evictions.add(evictAt, entry.id);
  }

  /** Emits `entry` joined with every buffered row of the other side that it matches. */
  private match(entry: Buffered): void {
    const others = this.buffers[1 - entry.side]!.get(entry.key);
    if (others === undefined) return;
    const left = entry.side === LEFT;
    for (let i = 0; i < others.length; i++) {
      const o = others[i]!;
      const l = left ? entry.t : o.t;
      const r = left ? o.t : entry.t;
      if (r < l + this.lower || r > l + this.upper) continue;
      entry.matched = true;
      if (!o.matched && this.outer[o.side]) {
        // Read before the in-place change: a checkpoint being encoded keeps the earlier value.
        this.store.get(o.id);
        o.matched = true;
        this.store.put(o.id, o);
      }
      if (left) this.out.emit(entry.row, o.row, entry.row);
      else this.out.emit(o.row, entry.row, entry.row);
    }
  }

  /** The row can match nothing more: an unmatched row of an outer side goes out alone. */
  private retire(entry: Buffered): void {
    if (entry.matched || !this.outer[entry.side]) return;
    if (entry.side === LEFT) this.out.emit(entry.row, null, entry.row);
    else this.out.emit(null, entry.row, entry.row);
  }

  private buffer(entry: Buffered): void {
    const byKey = this.buffers[entry.side]!;
    const list = byKey.get(entry.key);
    if (list === undefined) byKey.set(entry.key, [entry]);
    else list.push(entry);
  }

  onWatermark(watermark: number): void {
    this.evictions.closeUpTo(watermark, (id) => {
      const entry = this.store.get(id);
      if (entry === undefined) return;
      this.store.remove(id);
      const byKey = this.buffers[entry.side]!;
      const list = byKey.get(entry.key)!;
      // Rows mostly fall due in arrival order: the entry is near the front.
      list.splice(list.indexOf(entry), 1);
      if (list.length === 0) byKey.delete(entry.key);
      this.retire(entry);
    });
  }

  finishBatch(watermark: number): void {
    this.onWatermark(watermark);
  }

  nextDue(): number {
    return this.evictions.first();
  }

  restored(): void {
    const restored: Buffered[] = [];
    for (const [id, entry] of this.store.entries()) {
      entry.id = id;
      restored.push(entry);
    }
    const seqOf = (b: Buffered) => Number(b.id.slice(1));
    restored.sort((a, b) => seqOf(a) - seqOf(b));
    const times: number[] = [];
    const ids: string[] = [];
    for (const entry of restored) {
      this.buffer(entry);
      times.push(entry.side === LEFT ? entry.t + this.upper : entry.t - this.lower);
      ids.push(entry.id);
      this.seq = Math.max(this.seq, seqOf(entry) + 1);
    }
    this.evictions.addAll(times, ids);
  }

  stateCounters(): StateOperatorCounters {
    const m = this.store.metrics();
    return {
      operatorId: this.op.id,
      operatorName: 'symmetricHashJoin',
      numRowsTotal: m.numRowsTotal,
      numRowsUpdated: m.numRowsUpdated,
      numRowsRemoved: m.numRowsRemoved,
      numRowsDroppedByWatermark: this.dropped,
      memoryUsedBytes: m.memoryUsedBytes,
    };
  }
}
