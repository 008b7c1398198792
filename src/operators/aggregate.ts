import { ErrorCode, MillraceError } from '../errors.js';
import type { Aggregator } from '../plan/aggregates.js';
import {
  type AnalyzedPlan,
  aggregationTimeKey,
  eventTimeWatermarks,
  type PlannedOperator,
} from '../plan/analyze.js';
import type { OutputMode } from '../plan/output-mode.js';
import { isMicroBatch } from '../plan/trigger.js';
import { type AnyWindow, type SessionWindow, windowStarts } from '../plan/window.js';
import { GroupTable } from '../state/group-table.js';
import { InMemoryStateStore } from '../state/state-store.js';
import type { CheckpointedStore } from '../state/store-contract.js';
import { TimeIndex } from '../state/time-index.js';
import type { WindowSlab } from '../state/window-slab.js';
import { toEventTime } from '../util/event-time.js';
import {
  type Group,
  groupCodec,
  groupStoreKey,
  sessionKey,
  stateDeserializers,
  stateSerializers,
} from './aggregate-codec.js';
import { ResultRows } from './aggregate-rows.js';
import type { OperatorContext, RowSink, StatefulOperator, StateOperatorCounters } from './contract.js';

/**
 * Evicted groups the store removes per input row (see AggregateOperator.evict): a window of E2's
 * ≈ 30 000 groups a partition is gone within ≈ 4 000 rows (80 ms at 50 000 rows/s), at a few µs a
 * row, well before the next window closes.
 */
const EVICT_PER_ROW = 8;

/**
 * `groupBy(...).agg({...})`. Each row updates its group: one per time window it falls in, or the
 * session it opens, extends or bridges. With a watermark on the window's column, or on a grouping
 * column itself (and not in complete mode), a row is late where it could only change a group the
 * watermark closed — every window of it ends at or below the watermark (Spark's predicate), its
 * session would, or its time is at or below it — and is dropped and counted, or sent to the late
 * rows; groups behind the watermark are evicted.
 *
 * Real-time mode: in update mode the changed result row is emitted at once; in append mode a
 * window's row is emitted once, when the watermark passes its end.
 * Micro-batch mode: output waits for the end of the batch — update emits each group the batch
 * changed (its final value), append the windows the batch's watermark closed, complete the whole
 * result table.
 */
export class AggregateOperator implements StatefulOperator {
  readonly stateful = true;
  /** Where the groups are, for checkpoints: {@link table} or {@link groups}. */
  readonly store: CheckpointedStore;
  /**
   * Time windows (or none) grouped by one column, the common case: the groups in arrays, a row's
   * found without building a key or allocating anything once its key is known (see GroupTable).
   * Null for several key columns and for session windows, which use {@link groups}.
   */
  readonly table: GroupTable | null;
  /** Groups by composite key (several key columns, session windows); null with a table. */
  private readonly groups: InMemoryStateStore<Group> | null;
  private readonly keyColumns: string[];
  private readonly window: AnyWindow | undefined;
  private readonly rows: ResultRows;
  private readonly aggregators: Aggregator[];
  private readonly columns: (string | undefined)[];
  private readonly mode: OutputMode;
  /**
   * The grouping column that is the event time itself (a watermarked column grouped without a
   * window), or null.
   */
  private readonly timeKey: string | null;
  /** Groups have an end (a time window, a session, or a time key's value): they are indexed by it. */
  private readonly timed: boolean;
  /** A watermark on the window's column (or the time key): late rows are dropped, closed groups evicted. */
  private readonly watermarked: boolean;
  /** Open windows by end (the groups store's). */
  private readonly ends = new TimeIndex();
  /** The highest watermark whose windows were evicted through the store's removal queue. */
  private evictedUpTo = Number.NEGATIVE_INFINITY;
  /** Session windows: the open sessions of each group key, by start. */
  private readonly sessions = new Map<string, Group[]>();
  private readonly starts: number[] = [];
  /** A new group's states before it is added to the table. */
  private readonly scratch: unknown[];
  private dropped = 0;
  /** Micro-batch mode: groups changed in the current batch, in the order they first changed. */
  private readonly changed: Set<string> | null;
  private readonly changedSlabs: WindowSlab[] = [];
  private readonly changedSlots: number[] = [];
  /**
   * Real-time mode restores lazily (sessions need every group of a key at once): a group is
   * loaded when a row needs its key group, or dropped if the watermark evicted its window
   * meanwhile (update mode; append mode loads everything before it closes a window).
   */
  readonly restoresLazily: boolean;

  constructor(
    private readonly op: PlannedOperator<'aggregate'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
    plan: AnalyzedPlan,
  ) {
    const node = op.node;
    this.keyColumns = [...node.keys];
    this.window = node.window;
    this.aggregators = node.aggregates.map((a) => a.spec.aggregator);
    this.columns = node.aggregates.map((a) => a.spec.column);
    this.mode = plan.definition.outputMode;
    this.rows = new ResultRows(
      this.keyColumns,
      node.window !== undefined,
      node.aggregates.map((a) => a.name),
      this.aggregators,
    );
    this.timeKey = node.window === undefined ? aggregationTimeKey(plan, op) : null;
    this.timed = node.window !== undefined || this.timeKey !== null;
    // Complete mode keeps every group: the watermark neither drops rows nor evicts state there.
    this.watermarked =
      this.mode !== 'complete' &&
      (this.timeKey !== null ||
        (node.window !== undefined && eventTimeWatermarks(plan, op, node.window.column).length > 0));
    this.changed = isMicroBatch(plan.definition.trigger) ? new Set() : null;
    this.scratch = new Array(this.aggregators.length);
    if (node.keys.length === 1 && node.window?.kind !== 'session' && this.timeKey === null) {
      this.table = new GroupTable(
        this.aggregators.length,
        stateSerializers(this.aggregators),
        stateDeserializers(this.aggregators),
      );
      this.groups = null;
      this.store = this.table;
      this.restoresLazily = true;
    } else {
      this.table = null;
      this.groups = new InMemoryStateStore<Group>(
        48 + 24 * (node.keys.length + node.aggregates.length),
        groupCodec(this.aggregators),
      );
      this.store = this.groups;
      this.restoresLazily = node.window?.kind !== 'session';
      this.groups.keepRestored((key, g) => this.restoredGroup(key, g));
    }
  }

  // --- rows: windows, groups, sessions ------------------------------------------------------------

  push(row: unknown): void {
    if (this.table !== null) this.table.tidy();
    else if (this.groups!.removing) this.groups!.removeSome(EVICT_PER_ROW);
    const r = row as Record<string, unknown>;
    const w = this.window;
    if (w === undefined) {
      if (this.timeKey === null) this.update(r, 0, 0);
      else this.pushTimed(r, this.timeKey);
      return;
    }
    const raw = r?.[w.column];
    if (raw == null) return; // Spark: a row without event time belongs to no window.
    const t = toEventTime(raw);
    if (Number.isNaN(t)) {
      this.invalidTime(row, w.column, raw);
      return;
    }
    // Spark's predicate: a row is late for a window the watermark has closed (its end at or
    // below it), so an old row still counts in a window that is open.
    const late = this.watermarked ? this.ctx.lateWatermark() : Number.NEGATIVE_INFINITY;
    if (w.kind === 'session') {
      if (t + w.gapMs <= late) this.late(row);
      else this.session(r, t, w);
      return;
    }
    const starts = this.starts;
    const n = windowStarts(w, t, starts);
    // Latest window first: once one is closed, so are the rest.
    if (starts[0]! + w.sizeMs <= late) {
      this.late(row);
      return;
    }
    for (let i = 0; i < n; i++) {
      const start = starts[i]!;
      const end = start + w.sizeMs;
      if (end <= late) break;
      this.update(r, start, end);
    }
  }

  /**
   * Grouped by the watermarked column itself (no window): a group is final once the watermark
   * reaches its time, so it is indexed under that time as a window is under its end.
   */
  private pushTimed(r: Record<string, unknown>, column: string): void {
    const raw = r?.[column];
    if (raw == null) {
      // Spark: a group whose time is null is never late and never final.
      this.update(r, 0, Number.POSITIVE_INFINITY);
      return;
    }
    const t = toEventTime(raw);
    if (Number.isNaN(t)) {
      this.invalidTime(r, column, raw);
      return;
    }
    if (this.watermarked && t <= this.ctx.lateWatermark()) {
      this.late(r);
      return;
    }
    this.update(r, 0, t);
  }

  private late(row: unknown): void {
    this.dropped++;
    this.ctx.lateRow(this.op, row);
  }

  private invalidTime(row: unknown, column: string, raw: unknown): void {
    this.ctx.badRecord(
      this.op,
      row,
      new MillraceError(
        ErrorCode.INVALID_ROW,
        `${this.window === undefined ? 'event time' : 'window'} column '${column}' holds ${JSON.stringify(raw)}: ` +
          'expected ms since the epoch, a Date or a window',
      ),
    );
  }

  /** Folds a row into the group of (key, window start), creating it if new. */
  private update(row: Record<string, unknown>, start: number, end: number): void {
    const table = this.table;
    if (table !== null) {
      this.updateTable(table, row, start, end);
      return;
    }
    const store = this.groups!;
    // A window evicted by a watermark above the one that filters late rows (none in real time):
    // its groups may still wait for removal.
    if (end <= this.evictedUpTo) store.flushRemovals();
    const key = groupStoreKey(
      this.keyColumns.map((c) => row?.[c]),
      start,
    );
    let g = store.get(key);
    const isNew = g === undefined;
    if (g === undefined) g = this.newGroup(row, start, end);
    if (!this.fold(g.states, row)) return;
    if (isNew && this.timed && end !== Number.POSITIVE_INFINITY) this.ends.add(end, key);
    store.put(key, g);
    this.changedGroup(key, g);
  }

  /** {@link update} through the table. */
  private updateTable(table: GroupTable, row: Record<string, unknown>, start: number, end: number): void {
    const slab = table.slab(start, end);
    const v = row?.[this.keyColumns[0]!];
    let slot = table.find(slab, v);
    if (slot >= 0) {
      table.touch(slab, slot);
      if (!this.foldSlot(slab.states, slot, row)) return;
    } else {
      const states = this.scratch;
      for (let i = 0; i < states.length; i++) states[i] = this.aggregators[i]!.zero();
      if (!this.fold(states, row)) return;
      slot = table.add(slab, v, states);
    }
    if (this.changed !== null) {
      let batch = slab.batch;
      if (batch === null || batch.length < slab.keyIds.length) {
        const grown = new Uint8Array(slab.keyIds.length);
        if (batch !== null) grown.set(batch);
        batch = grown;
        slab.batch = batch;
      }
      if (batch[slot] === 0) {
        batch[slot] = 1;
        this.changedSlabs.push(slab);
        this.changedSlots.push(slot);
      }
    } else if (this.mode === 'update') {
      this.next.push(this.rows.ofSlot(this.table!, slab, slot));
    }
  }

  /**
   * Evicts the groups of a time window that ends at `watermark` or before, without emitting them
   * (update mode). A time window's group keeps the end it was indexed under and only eviction
   * removes it, so they are removed without a lookup first, and not at once: the store removes
   * them {@link EVICT_PER_ROW} at a time as the next rows arrive (a large window evicted at once
   * is a stop of the row path of tens of ms every window — ≈ 30 000 groups a partition in E2,
   * every second). No row reaches them meanwhile: a row of a window the watermark passed is late,
   * and {@link update} removes every queued group first if one could be.
   */
  private readonly evict = (keys: string[]): void => this.groups!.removeLater(keys);

  /**
   * A row opens `[t, t + gap)` for its group; every open session it overlaps or touches merges
   * into it (Spark: sessions closer than the gap are one session).
   */
  private session(row: Record<string, unknown>, t: number, w: SessionWindow): void {
    const groupKey = groupStoreKey(
      this.keyColumns.map((c) => row?.[c]),
      0,
    );
    const open = this.sessions.get(groupKey) ?? [];
    let start = t;
    let end = t + w.gapMs;
    const merged: Group[] = [];
    const kept: Group[] = [];
    for (const s of open) {
      if (s.start <= end && start <= s.end) {
        merged.push(s);
        start = Math.min(start, s.start);
        end = Math.max(end, s.end);
      } else {
        kept.push(s);
      }
    }
    // The merge may reach sessions the first pass had already kept: repeat until stable.
    for (let grew = true; grew; ) {
      grew = false;
      for (let i = kept.length - 1; i >= 0; i--) {
        const s = kept[i]!;
        if (s.start <= end && start <= s.end) {
          merged.push(...kept.splice(i, 1));
          start = Math.min(start, s.start);
          end = Math.max(end, s.end);
          grew = true;
        }
      }
    }
    const g = this.newGroup(row, start, end);
    for (const s of merged) {
      for (let i = 0; i < g.states.length; i++)
        g.states[i] = this.aggregators[i]!.merge(g.states[i], s.states[i]);
    }
    if (!this.fold(g.states, row)) return;
    const store = this.groups!;
    for (const s of merged) store.remove(sessionKey(groupKey, s.start));
    const key = sessionKey(groupKey, start);
    store.put(key, g);
    this.ends.add(end, key);
    kept.push(g);
    kept.sort((a, b) => a.start - b.start);
    this.sessions.set(groupKey, kept);
    this.changedGroup(key, g);
  }

  // --- aggregates: folding a row into a group's states --------------------------------------------

  /** A new group of the groups store. */
  private newGroup(row: Record<string, unknown>, start: number, end: number): Group {
    const keys = this.keyColumns.map((k) => row?.[k]);
    const states = this.aggregators.map((a) => a.zero());
    return { keys, start, end, states };
  }

  /** Adds the row's values to a group's states; a throwing aggregator makes it a bad record. */
  private fold(states: unknown[], row: Record<string, unknown>): boolean {
    try {
      for (let i = 0; i < states.length; i++) {
        const column = this.columns[i];
        states[i] = this.aggregators[i]!.add(states[i], column === undefined ? row : row?.[column]);
      }
      return true;
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return false;
    }
  }

  /** {@link fold} for the states of a table slot. */
  private foldSlot(columns: unknown[][], slot: number, row: Record<string, unknown>): boolean {
    try {
      for (let i = 0; i < columns.length; i++) {
        const column = this.columns[i];
        const states = columns[i]!;
        states[slot] = this.aggregators[i]!.add(states[slot], column === undefined ? row : row?.[column]);
      }
      return true;
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return false;
    }
  }

  private changedGroup(key: string, g: Group): void {
    if (this.changed !== null) this.changed.add(key);
    else if (this.mode === 'update') this.next.push(this.rows.ofGroup(g));
  }

  // --- watermarks and batches: closing and emitting windows ---------------------------------------

  onWatermark(watermark: number): void {
    this.closeUpTo(watermark);
  }

  finishBatch(watermark: number): void {
    const table = this.table;
    if (this.mode === 'update') {
      if (table !== null) {
        const slabs = this.changedSlabs;
        const slots = this.changedSlots;
        for (let i = 0; i < slabs.length; i++) {
          this.next.push(this.rows.ofSlot(this.table!, slabs[i]!, slots[i]!));
          slabs[i]!.batch![slots[i]!] = 0;
        }
        slabs.length = 0;
        slots.length = 0;
      } else {
        for (const key of this.changed!) {
          const g = this.groups!.get(key);
          if (g !== undefined) this.next.push(this.rows.ofGroup(g));
        }
      }
    } else if (this.mode === 'complete') {
      if (table !== null) {
        for (const slab of table.windows())
          for (let s = 0; s < slab.n; s++) this.next.push(this.rows.ofSlot(this.table!, slab, s));
      } else {
        for (const [, g] of this.groups!.entries()) this.next.push(this.rows.ofGroup(g));
      }
    }
    this.changed!.clear();
    this.closeUpTo(watermark);
  }

  nextDue(): number {
    if (!this.watermarked) return Number.POSITIVE_INFINITY;
    return this.table !== null ? this.table.nextEnd : this.ends.first();
  }

  /** Evicts the windows that end at or before `watermark`, emitting each in append mode. */
  private closeUpTo(watermark: number): void {
    if (!this.watermarked) return;
    const table = this.table;
    if (table !== null) {
      if (this.mode !== 'append') {
        table.evictUpTo(watermark, null);
        return;
      }
      // Closing emits every group of the window: each must be loaded first.
      table.loadAll();
      table.evictUpTo(watermark, this.emitSlot);
      return;
    }
    const store = this.groups!;
    if (this.mode !== 'append' && this.window?.kind !== 'session') {
      this.ends.takeUpTo(watermark, this.evict);
      if (watermark > this.evictedUpTo) this.evictedUpTo = watermark;
      return;
    }
    store.loadAll();
    this.ends.closeUpTo(watermark, (key, end) => {
      const g = store.get(key);
      // A session that grew since it was indexed falls due later, under its new end.
      if (g === undefined || g.end !== end) return;
      if (this.mode === 'append') this.next.push(this.rows.ofGroup(g));
      store.remove(key);
      if (this.window?.kind === 'session') this.forgetSession(g);
    });
  }

  private readonly emitSlot = (slab: WindowSlab, slot: number): void =>
    this.next.push(this.rows.ofSlot(this.table!, slab, slot));

  // --- restores and counters ----------------------------------------------------------------------

  restored(): void {
    if (this.table !== null) {
      this.table.restored();
      return;
    }
    const store = this.groups!;
    // A lazy restore hears each group as its key group loads (restoredGroup).
    if (store.restoring || !this.timed) return;
    const size = store.size;
    const ends = new Array<number>(size);
    const keys = new Array<string>(size);
    let i = 0;
    for (const [key, g] of store.entries()) {
      if (g.end === Number.POSITIVE_INFINITY) continue;
      ends[i] = g.end;
      keys[i++] = key;
      if (this.window?.kind === 'session') {
        const groupKey = groupStoreKey(g.keys, 0);
        const open = this.sessions.get(groupKey);
        if (open === undefined) this.sessions.set(groupKey, [g]);
        else open.push(g);
      }
    }
    for (const open of this.sessions.values()) open.sort((a, b) => a.start - b.start);
    ends.length = i;
    keys.length = i;
    this.ends.addAll(ends, keys);
  }

  /** A group a lazy restore loaded (see {@link restoresLazily}): kept under its end, or dropped if evicted. */
  private restoredGroup(key: string, g: Group): boolean {
    if (this.timed) {
      // Only update mode evicts by the removal queue, and so advances evictedUpTo.
      if (g.end <= this.evictedUpTo) return false;
      if (g.end !== Number.POSITIVE_INFINITY) this.ends.add(g.end, key);
    }
    return true;
  }

  private forgetSession(g: Group): void {
    const groupKey = groupStoreKey(g.keys, 0);
    const open = this.sessions.get(groupKey);
    if (open === undefined) return;
    const left = open.filter((s) => s !== g);
    if (left.length === 0) this.sessions.delete(groupKey);
    else this.sessions.set(groupKey, left);
  }

  stateCounters(): StateOperatorCounters {
    const m = (this.table ?? this.groups!).metrics();
    return {
      operatorId: this.op.id,
      operatorName: this.window?.kind === 'session' ? 'sessionWindowStateStoreSave' : 'stateStoreSave',
      numRowsTotal: m.numRowsTotal,
      numRowsUpdated: m.numRowsUpdated,
      numRowsRemoved: m.numRowsRemoved,
      numRowsDroppedByWatermark: this.dropped,
      memoryUsedBytes: m.memoryUsedBytes,
    };
  }
}
