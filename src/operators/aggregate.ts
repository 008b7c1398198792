import type { Aggregator } from '../api/aggregates.js';
import type { OutputMode } from '../api/output-mode.js';
import { isMicroBatch } from '../api/trigger.js';
import { type AnyWindow, type SessionWindow, windowStarts } from '../api/window.js';
import { type AnalyzedPlan, eventTimeWatermarks, type PlannedOperator } from '../plan/analyze.js';
import { InMemoryStateStore } from '../state/state-store.js';
import { TimeIndex } from '../state/time-index.js';
import { toEventTime } from '../util/event-time.js';
import { type Group, groupCodec } from './aggregate-codec.js';
import type { OperatorContext, RowSink, StatefulOperator, StateOperatorCounters } from './contract.js';

/**
 * Evicted groups the store removes per input row (see AggregateOperator.evict): a window of E2's
 * ≈ 30 000 groups a partition is gone within ≈ 4 000 rows (80 ms at 50 000 rows/s), at a few µs a
 * row, well before the next window closes.
 */
const EVICT_PER_ROW = 8;

/**
 * `groupBy(...).agg({...})`. Each row updates its group: one per time window it falls in, or the
 * session it opens, extends or bridges. With a watermark on the window's column (and not in
 * complete mode), rows at or below the watermark in force are late (dropped and counted, or sent
 * to the late rows) and windows behind it are evicted.
 *
 * Real-time mode: in update mode the changed result row is emitted at once; in append mode a
 * window's row is emitted once, when the watermark passes its end.
 * Micro-batch mode: output waits for the end of the batch — update emits each group the batch
 * changed (its final value), append the windows the batch's watermark closed, complete the whole
 * result table.
 */
export class AggregateOperator implements StatefulOperator {
  readonly stateful = true;
  readonly store: InMemoryStateStore<Group>;
  private readonly keyColumns: string[];
  private readonly window: AnyWindow | undefined;
  private readonly names: string[];
  private readonly aggregators: Aggregator[];
  private readonly columns: (string | undefined)[];
  private readonly mode: OutputMode;
  /** A watermark on the window's column: late rows are dropped, closed windows evicted. */
  private readonly watermarked: boolean;
  /** Open windows by end. */
  private readonly ends = new TimeIndex();
  /**
   * Time windows (and no window) grouped by one column: the store key of each group, by window
   * start and then by the row's raw key value (a string or a number). The hot path finds a row's
   * group through it without building the composite store key, which is ≈ 300 B of garbage a row
   * (number-to-string, concatenation, flattening to hash it) and makes young-generation GC run
   * far more often. Rows whose key is of another type take the store key path. A window's map
   * goes when the watermark evicts the window. Null when the operator has no use for it.
   */
  private readonly index: Map<number, Map<string | number, string>> | null;
  /**
   * Window starts (0 without a window) holding restored groups the index does not list yet: a
   * restore does not index its groups (that is a map insertion per group, a third of a restore's
   * time); a row that misses the index there looks in the store and indexes what it finds.
   */
  private readonly unindexed = new Set<number>();
  /** The window start and key map of the last indexed row: rows mostly hit the same window. */
  private lastStart = Number.NaN;
  private lastKeys: Map<string | number, string> | undefined;
  /** The highest watermark whose windows were evicted through the store's removal queue. */
  private evictedUpTo = Number.NEGATIVE_INFINITY;
  /** Session windows: the open sessions of each group key, by start. */
  private readonly sessions = new Map<string, Group[]>();
  private readonly starts: number[] = [];
  private dropped = 0;
  /** Micro-batch mode: groups changed in the current batch, in the order they first changed. */
  private readonly changed: Set<string> | null;
  /**
   * Time windows and no window restore lazily (sessions need every group of a key at once): a
   * group is indexed as its key group loads, or dropped if the watermark evicted its window
   * meanwhile (update mode; append mode loads everything before it closes a window).
   */
  readonly restoreEntry: ((key: string, value: unknown) => boolean) | null;

  constructor(
    private readonly op: PlannedOperator<'aggregate'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
    plan: AnalyzedPlan,
  ) {
    const node = op.node;
    this.keyColumns = [...node.keys];
    this.window = node.window;
    this.names = node.aggregates.map((a) => a.name);
    this.aggregators = node.aggregates.map((a) => a.spec.aggregator);
    this.columns = node.aggregates.map((a) => a.spec.column);
    this.mode = plan.definition.outputMode;
    // Complete mode keeps every group: the watermark neither drops rows nor evicts state there.
    this.watermarked =
      this.mode !== 'complete' &&
      node.window !== undefined &&
      eventTimeWatermarks(plan, op, node.window.column).length > 0;
    this.changed = isMicroBatch(plan.definition.trigger) ? new Set() : null;
    this.index = node.keys.length === 1 && node.window?.kind !== 'session' ? new Map() : null;
    this.store = new InMemoryStateStore<Group>(
      48 + 24 * (node.keys.length + node.aggregates.length),
      groupCodec(this.aggregators),
    );
    this.restoreEntry =
      node.window?.kind === 'session' ? null : (key, value) => this.indexRestored(key, value as Group);
  }

  push(row: unknown): void {
    if (this.store.removing) this.store.removeSome(EVICT_PER_ROW);
    const r = row as Record<string, unknown>;
    const w = this.window;
    if (w === undefined) {
      this.update(r, 0, 0);
      return;
    }
    const raw = r?.[w.column];
    if (raw == null) return; // Spark: a row without event time belongs to no window.
    const t = toEventTime(raw);
    if (Number.isNaN(t)) {
      this.ctx.badRecord(
        this.op,
        row,
        new TypeError(
          `window column '${w.column}' holds ${JSON.stringify(raw)}: expected ms since the epoch or a Date`,
        ),
      );
      return;
    }
    if (this.watermarked && t <= this.ctx.watermark()) {
      this.dropped++;
      this.ctx.lateRow(this.op, row);
      return;
    }
    if (w.kind === 'session') {
      this.session(r, t, w);
      return;
    }
    const starts = this.starts;
    const n = windowStarts(w, t, starts);
    for (let i = 0; i < n; i++) {
      const start = starts[i]!;
      this.update(r, start, start + w.sizeMs);
    }
  }

  /** Folds a row into the group of (key, window start), creating it if new. */
  private update(row: Record<string, unknown>, start: number, end: number): void {
    // A window evicted by a watermark above the one that filters late rows (none in real time):
    // its groups may still wait for removal.
    if (end <= this.evictedUpTo) this.store.flushRemovals();
    if (this.index !== null) {
      const v = row?.[this.keyColumns[0]!];
      if (typeof v === 'string' || typeof v === 'number') {
        this.updateIndexed(row, v, start, end);
        return;
      }
    }
    const key = this.groupKey(row, start);
    let g = this.store.get(key);
    const isNew = g === undefined;
    if (g === undefined) g = this.newGroup(row, start, end);
    if (!this.fold(g, row)) return;
    if (isNew && this.window !== undefined) this.ends.add(end, key);
    this.store.put(key, g);
    this.changedGroup(key, g);
  }

  /** {@link update} for a single-column key that is a string or a number, through the index. */
  private updateIndexed(row: Record<string, unknown>, v: string | number, start: number, end: number): void {
    let keys = this.lastKeys;
    if (start !== this.lastStart || keys === undefined) {
      keys = this.index!.get(start);
      if (keys === undefined) {
        keys = new Map();
        this.index!.set(start, keys);
      }
      this.lastStart = start;
      this.lastKeys = keys;
    }
    let key = keys.get(v);
    if (
      key === undefined &&
      (this.store.restoring || (this.unindexed.size !== 0 && this.unindexed.has(start)))
    ) {
      // A restored group the index does not list yet (see unindexed), or one of a key group a
      // lazy restore has not loaded yet (the store's get loads it).
      const restored = typeof v === 'string' ? `s${start}|${v}` : `n${start}|${v}`;
      if (this.store.get(restored) !== undefined) {
        key = restored;
        keys.set(v, key);
      }
    }
    let g: Group | undefined;
    if (key !== undefined) {
      // The store's get: a checkpoint in progress copies the value before the fold changes it.
      g = this.store.get(key)!;
      if (!this.fold(g, row)) return;
    } else {
      key = typeof v === 'string' ? `s${start}|${v}` : `n${start}|${v}`;
      g = this.newGroup(row, start, end);
      if (!this.fold(g, row)) return;
      keys.set(v, key);
      if (this.window !== undefined) this.ends.add(end, key);
    }
    this.store.put(key, g);
    this.changedGroup(key, g);
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
  private readonly evict = (keys: string[]): void => this.store.removeLater(keys);

  /** Forgets the index maps of the windows that end at or before `watermark` (evicted). */
  private dropIndexed(watermark: number): void {
    const index = this.index;
    const w = this.window;
    if (index === null || w === undefined || w.kind === 'session') return;
    for (const start of index.keys()) {
      if (start + w.sizeMs <= watermark) {
        index.delete(start);
        if (start === this.lastStart) this.lastKeys = undefined;
      }
    }
    for (const start of this.unindexed) if (start + w.sizeMs <= watermark) this.unindexed.delete(start);
  }

  /**
   * A row opens `[t, t + gap)` for its group; every open session it overlaps or touches merges
   * into it (Spark: sessions closer than the gap are one session).
   */
  private session(row: Record<string, unknown>, t: number, w: SessionWindow): void {
    const groupKey = this.groupKey(row, 0);
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
    if (!this.fold(g, row)) return;
    for (const s of merged) this.store.remove(this.sessionKey(groupKey, s.start));
    const key = this.sessionKey(groupKey, start);
    this.store.put(key, g);
    this.ends.add(end, key);
    kept.push(g);
    kept.sort((a, b) => a.start - b.start);
    this.sessions.set(groupKey, kept);
    this.changedGroup(key, g);
  }

  /**
   * A new group. One key column and one aggregate (the common case) build their arrays as
   * literals: a literal's allocation site lets V8 see that nearly every group outlives many
   * young-generation collections and allocate them in the old generation at once (pretenuring),
   * instead of copying every new group twice.
   */
  private newGroup(row: Record<string, unknown>, start: number, end: number): Group {
    const keyColumns = this.keyColumns;
    const aggregators = this.aggregators;
    const keys = keyColumns.length === 1 ? [row?.[keyColumns[0]!]] : keyColumns.map((k) => row?.[k]);
    const states = aggregators.length === 1 ? [aggregators[0]!.zero()] : aggregators.map((a) => a.zero());
    return { keys, start, end, states };
  }

  /** Adds the row's values to the group's states; a throwing aggregator makes it a bad record. */
  private fold(g: Group, row: Record<string, unknown>): boolean {
    const states = g.states;
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

  private changedGroup(key: string, g: Group): void {
    if (this.changed !== null) this.changed.add(key);
    else if (this.mode === 'update') this.next.push(this.resultRow(g));
  }

  onWatermark(watermark: number): void {
    this.closeUpTo(watermark);
  }

  finishBatch(watermark: number): void {
    if (this.mode === 'update') {
      for (const key of this.changed!) {
        const g = this.store.get(key);
        if (g !== undefined) this.next.push(this.resultRow(g));
      }
    } else if (this.mode === 'complete') {
      for (const [, g] of this.store.entries()) this.next.push(this.resultRow(g));
    }
    this.changed!.clear();
    this.closeUpTo(watermark);
  }

  nextDue(): number {
    return this.watermarked ? this.ends.first() : Number.POSITIVE_INFINITY;
  }

  /** Evicts the windows that end at or before `watermark`, emitting each in append mode. */
  private closeUpTo(watermark: number): void {
    if (!this.watermarked) return;
    if (this.mode !== 'append' && this.window?.kind === 'window') {
      this.ends.takeUpTo(watermark, this.evict);
      if (watermark > this.evictedUpTo) this.evictedUpTo = watermark;
      this.dropIndexed(watermark);
      return;
    }
    // Closing emits every group of the window (append mode): each must be loaded first.
    this.store.loadAll();
    this.ends.closeUpTo(watermark, (key, end) => {
      const g = this.store.get(key);
      // A session that grew since it was indexed falls due later, under its new end.
      if (g === undefined || g.end !== end) return;
      if (this.mode === 'append') this.next.push(this.resultRow(g));
      this.store.remove(key);
      if (this.window?.kind === 'session') this.forgetSession(g);
    });
    this.dropIndexed(watermark);
  }

  restored(): void {
    // A lazy restore indexes each group as its key group loads (indexRestored).
    if (this.store.restoring) return;
    this.restoreIndex();
    if (this.window === undefined) return;
    const size = this.store.size;
    const ends = new Array<number>(size);
    const keys = new Array<string>(size);
    let i = 0;
    for (const [key, g] of this.store.entries()) {
      ends[i] = g.end;
      keys[i++] = key;
      if (this.window.kind === 'session') {
        const groupKey = this.groupKeyOf(g.keys, 0);
        const open = this.sessions.get(groupKey);
        if (open === undefined) this.sessions.set(groupKey, [g]);
        else open.push(g);
      }
    }
    for (const open of this.sessions.values()) open.sort((a, b) => a.start - b.start);
    this.ends.addAll(ends, keys);
  }

  /** Notes the windows whose restored groups the index does not list (see {@link unindexed}). */
  private restoreIndex(): void {
    if (this.index === null) return;
    for (const [, g] of this.store.entries()) this.unindexed.add(g.start);
  }

  /** A group a lazy restore loaded (see {@link restoreEntry}): indexed, or dropped if evicted. */
  private indexRestored(key: string, g: Group): boolean {
    if (this.window !== undefined) {
      // Only update mode evicts by the removal queue, and so advances evictedUpTo.
      if (g.end <= this.evictedUpTo) return false;
      this.ends.add(g.end, key);
    }
    if (this.index !== null) this.unindexed.add(g.start);
    return true;
  }

  private forgetSession(g: Group): void {
    const groupKey = this.groupKeyOf(g.keys, 0);
    const open = this.sessions.get(groupKey);
    if (open === undefined) return;
    const left = open.filter((s) => s !== g);
    if (left.length === 0) this.sessions.delete(groupKey);
    else this.sessions.set(groupKey, left);
  }

  stateCounters(): StateOperatorCounters {
    const m = this.store.metrics();
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

  /** Output row: grouping columns by name, the window, then the aggregates by name. */
  private resultRow(g: Group): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < this.keyColumns.length; i++) out[this.keyColumns[i]!] = g.keys[i];
    if (this.window !== undefined) out.window = { start: g.start, end: g.end };
    for (let i = 0; i < this.names.length; i++)
      out[this.names[i]!] = this.aggregators[i]!.result(g.states[i]);
    return out;
  }

  private groupKey(row: Record<string, unknown>, start: number): string {
    const cols = this.keyColumns;
    if (cols.length === 1) {
      const v = row?.[cols[0]!];
      if (typeof v === 'string') return `s${start}|${v}`;
      if (typeof v === 'number') return `n${start}|${v}`;
    }
    return JSON.stringify([start, ...cols.map((c) => row?.[c] ?? null)]);
  }

  /** The same string as groupKey, from a group's key values. */
  private groupKeyOf(keys: unknown[], start: number): string {
    if (keys.length === 1) {
      const v = keys[0];
      if (typeof v === 'string') return `s${start}|${v}`;
      if (typeof v === 'number') return `n${start}|${v}`;
    }
    return JSON.stringify([start, ...keys.map((k) => k ?? null)]);
  }

  /** Store key of a session: its group (encoded with start 0) and its start. */
  private sessionKey(groupKey: string, start: number): string {
    return `${groupKey}@${start}`;
  }
}
