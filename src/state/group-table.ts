import {
  type KeyGroupLoad,
  type KeyGroupPiece,
  type KeyGroupSource,
  RestoredByKeyGroup,
} from './key-groups.js';
import { KeyIds } from './key-ids.js';
import type { CheckpointedStore, StateStoreMetrics } from './store-contract.js';
import { TableFreeze } from './table-freeze.js';
import { compositeKey, keyTextChars, TableStaging } from './table-staging.js';
import { grownInts, WindowSlab } from './window-slab.js';

export { compositeKey, WindowSlab };

/** Key ids of a dropped window released per row (see GroupTable.releasing). */
const RELEASE_PER_ROW = 64;

/** Idle key ids (interned, in no window) allowed beyond the live ones before a purge. */
const IDLE_SLACK = 4096;

/**
 * The state of an aggregation grouped by one column, in tumbling or sliding windows or in none —
 * `groupBy(window(...), key)` and `groupBy(key)` — kept in typed and unboxed arrays rather than a
 * map of group objects:
 *
 * - each key value is interned once, as a small integer id, in one map for the whole partition; a
 *   card seen in the last window is found again in the next without a new string or entry;
 * - each window is a {@link WindowSlab}: slots of (key id, states) and an open-addressing table
 *   from key id to slot;
 * - a window the watermark passes is dropped whole (its key ids released a few per row, its
 *   arrays then reused by a new window); its key ids stay interned, idle, until the idle ones
 *   outnumber the live ones, and are then purged a few per row.
 *
 * So a row's group costs no allocation once its key has been seen, and nothing a row leaves behind
 * outlives it: the young-generation collections that copied every new group object (E2's tail) do
 * not happen. The row path is a lookup in the key map and a probe of the window's table.
 *
 * Checkpoints produce the same state files as an {@link InMemoryStateStore} of groups (format 3,
 * composite keys `s<start>|<key>` by key group, values as groupCodec's chunks), through a
 * {@link TableFreeze}: it walks the frozen slots in the background while rows go on, and a slot a
 * row touches before the walk reaches it is encoded first (copy on touch, with one flag per slot
 * per checkpoint). Restores read those files — by key group, lazily or not — or older formats.
 */
export class GroupTable extends RestoredByKeyGroup implements CheckpointedStore {
  /** Live windows by start. */
  private readonly slabs = new Map<number, WindowSlab>();
  private lastStart = Number.NaN;
  private lastSlab: WindowSlab | null = null;
  /** A dropped window kept for the next new one (see WindowSlab.reuse). */
  private spare: WindowSlab | null = null;
  /**
   * A dropped window whose key ids are being released, {@link RELEASE_PER_ROW} per row: at 1 M
   * keys, releasing a window's ≈ 50 000 at once is as many cache misses, a 4-ms stop of the row
   * path every second. Its slots from `releasedUpTo` on still count as references.
   */
  private releasing: WindowSlab | null = null;
  private releasedUpTo = 0;
  /** The earliest end of a live window (Infinity: none). */
  private firstEnd = Number.POSITIVE_INFINITY;
  /** The highest watermark windows were evicted at: groups of them a restore loads are dropped. */
  private evictedUpTo = Number.NEGATIVE_INFINITY;

  /** Interned keys: strings, numbers, booleans and null by value, other values by their JSON. */
  private readonly keys = new KeyIds();
  /** The last key {@link find} looked for, and its id (−1: not interned), for {@link add}. */
  private foundKey: unknown;
  private foundId = -1;
  /** Per key id: windows holding it; the checkpoint after which it may be purged; its characters. */
  private refs: Int32Array = new Int32Array(1024);
  private purgeAfter: Int32Array = new Int32Array(1024);
  private chars: Int32Array = new Int32Array(1024);
  private readonly free: number[] = [];
  private idle = 0;
  private purgeAt = -1;

  private tracking = false;
  /** Checkpoints begun, and those being encoded (oldest first). */
  private seq = 0;
  private freezes: TableFreeze[] = [];

  private groups = 0;
  private updates = 0;
  private removals = 0;

  /** A restore of files without key groups, applied when the operator starts (see restored). */
  private staging: TableStaging | null = null;

  /**
   * @param aggregates states per group.
   * @param serializers per aggregate, a state as checkpoint data, detached from the live state.
   * @param deserializers per aggregate, checkpoint data back as a state.
   */
  constructor(
    readonly aggregates: number,
    readonly serializers: readonly ((state: unknown) => unknown)[],
    private readonly deserializers: readonly ((data: unknown) => unknown)[],
    /** Idle key ids allowed beyond the live ones before a purge. */
    private readonly idleSlack = IDLE_SLACK,
  ) {
    super();
  }

  // --- the row path -----------------------------------------------------------------------------

  /** The window starting at `start` (ending at `end`), created if new. */
  slab(start: number, end: number): WindowSlab {
    if (start === this.lastStart) return this.lastSlab!;
    let slab = this.slabs.get(start);
    if (slab === undefined) slab = this.newSlab(start, end);
    this.lastStart = start;
    this.lastSlab = slab;
    return slab;
  }

  /** The slot of key `v` in `slab`, or −1 (a lazy restore loads the key's group first). */
  find(slab: WindowSlab, v: unknown): number {
    const id = this.keys.find(v);
    this.foundKey = v;
    this.foundId = id;
    const slot = id < 0 ? -1 : slab.find(id);
    if (slot >= 0 || this.loading === null) return slot;
    const group = slab.keyGroup(v);
    if (!this.loading.isPending(group)) return -1;
    this.loadGroup(this.loading, group);
    return this.find(slab, v);
  }

  /** Adds the group of key `v` (absent from `slab`) with `states`; returns its slot. */
  add(slab: WindowSlab, v: unknown, states: readonly unknown[]): number {
    // After find(v), as a row's new group is: its key's id is known (no purge runs in between).
    const id = v === this.foundKey && this.foundId >= 0 ? this.foundId : this.intern(v);
    const slot = this.insert(slab, id, states);
    if (this.tracking) slab.markDirty(slot);
    this.updates++;
    return slot;
  }

  /**
   * A slot's states are about to change: each checkpoint that has not encoded it yet encodes it
   * now (copy on touch), and it is marked for the next changelog.
   */
  touch(slab: WindowSlab, slot: number): void {
    const marks = slab.marks;
    for (let i = 0; i < marks.length; i++) {
      const m = marks[i]!;
      if (slot < m.bits.length && m.bits[slot] === 1) {
        m.bits[slot] = 0;
        m.freeze.encode(slab, slot);
      }
    }
    if (this.tracking) slab.markDirty(slot);
    this.updates++;
  }

  /** The key value of a key id. */
  keyValue(id: number): unknown {
    return this.keys.value(id);
  }

  /**
   * Per row: releases a few key ids of a dropped window, or purges a few idle ones when the idle
   * ones outnumber the live ones (see the class comment).
   */
  tidy(): void {
    if (this.releasing !== null) this.releaseSome(RELEASE_PER_ROW);
    else if (this.purgeAt >= 0) this.purgeSome(16);
  }

  /** A live window [start, end): a dropped one reused if there is one (see WindowSlab.reuse). */
  private newSlab(start: number, end: number): WindowSlab {
    const spare = this.spare;
    let slab: WindowSlab;
    if (spare !== null) {
      this.spare = null;
      spare.reuse(start, end);
      slab = spare;
    } else {
      slab = new WindowSlab(start, end, this.aggregates);
    }
    this.slabs.set(start, slab);
    if (end < this.firstEnd) this.firstEnd = end;
    return slab;
  }

  private insert(slab: WindowSlab, id: number, states: readonly unknown[]): number {
    if (this.refs[id]++ === 0) this.idle--;
    const slot = slab.insert(id);
    const columns = slab.states;
    for (let c = 0; c < columns.length; c++) columns[c]![slot] = states[c];
    slab.keyChars += slab.prefixChars + this.chars[id]!;
    this.groups++;
    return slot;
  }

  private intern(v: unknown): number {
    const known = this.keys.find(v);
    if (known >= 0) return known;
    let id = this.free.pop();
    if (id === undefined) {
      id = this.keys.span;
      if (id === this.refs.length) {
        this.refs = grownInts(this.refs, id * 2);
        this.purgeAfter = grownInts(this.purgeAfter, id * 2);
        this.chars = grownInts(this.chars, id * 2);
      }
    }
    this.keys.set(v, id);
    this.refs[id] = 0;
    this.chars[id] = keyTextChars(v);
    this.idle++;
    return id;
  }

  private release(id: number): void {
    if (--this.refs[id]! !== 0) return;
    this.idle++;
    // A checkpoint begun before may still encode a window that held it.
    this.purgeAfter[id] = this.seq;
  }

  private purgeSome(budget: number): void {
    const done = this.freezes.length === 0 ? this.seq : this.freezes[0]!.seq - 1;
    const span = this.keys.span;
    let at = this.purgeAt;
    for (; budget > 0 && at < span; budget--, at++) {
      // Free ids hold −1.
      if (this.refs[at] !== 0 || this.purgeAfter[at]! > done) continue;
      this.keys.delete(at);
      this.refs[at] = -1;
      this.free.push(at);
      this.idle--;
    }
    this.purgeAt = at < span ? at : -1;
    this.foundKey = undefined;
    this.foundId = -1;
  }

  // --- windows ----------------------------------------------------------------------------------

  /** The earliest end of a live window (Infinity: none). */
  get nextEnd(): number {
    return this.firstEnd;
  }

  /**
   * Drops every window that ends at or before `watermark`, handing each of its slots to `emit`
   * first (append mode) if given. A lazy restore must have loaded everything before an emitting
   * close.
   */
  evictUpTo(watermark: number, emit: ((slab: WindowSlab, slot: number) => void) | null): void {
    if (watermark > this.evictedUpTo) this.evictedUpTo = watermark;
    if (this.firstEnd > watermark) return;
    let first = Number.POSITIVE_INFINITY;
    for (const slab of this.slabs.values()) {
      if (slab.end > watermark) {
        if (slab.end < first) first = slab.end;
        continue;
      }
      if (emit !== null) for (let s = 0; s < slab.n; s++) emit(slab, s);
      this.drop(slab);
    }
    this.firstEnd = first;
  }

  private drop(slab: WindowSlab): void {
    this.slabs.delete(slab.start);
    if (this.lastSlab === slab) {
      this.lastSlab = null;
      this.lastStart = Number.NaN;
    }
    this.groups -= slab.n;
    this.removals += slab.n;
    slab.dirty = null;
    slab.dirtyList = [];
    if (this.releasing !== null) this.releaseSome(Number.POSITIVE_INFINITY);
    this.releasing = slab;
    this.releasedUpTo = 0;
  }

  /**
   * Releases up to `budget` key ids of the window being dropped (see {@link releasing}); once all
   * are, the window may be reused and idle ids purged.
   */
  private releaseSome(budget: number): void {
    const slab = this.releasing!;
    const keyIds = slab.keyIds;
    const end = Math.min(slab.n, this.releasedUpTo + budget);
    for (let s = this.releasedUpTo; s < end; s++) this.release(keyIds[s]!);
    this.releasedUpTo = end;
    if (end < slab.n) return;
    this.releasing = null;
    // A checkpoint still encoding the window keeps it as it is.
    if (slab.marks.length === 0 && (this.spare === null || slab.keyIds.length > this.spare.keyIds.length)) {
      this.spare = slab;
    }
    const live = this.keys.span - this.free.length - this.idle;
    if (this.purgeAt < 0 && this.idle > live + this.idleSlack) this.purgeAt = 0;
  }

  /** Live windows, in creation order (everything loaded first). */
  windows(): IterableIterator<WindowSlab> {
    this.loadAll();
    return this.slabs.values();
  }

  // --- metrics ----------------------------------------------------------------------------------

  /** Groups held, those of key groups a lazy restore has not loaded yet included. */
  get size(): number {
    return this.groups + (this.loading?.unloadedSize ?? 0);
  }

  private get keyChars(): number {
    let chars = this.loading?.unloadedChars ?? 0;
    for (const slab of this.slabs.values()) chars += slab.keyChars;
    return chars;
  }

  metrics(): StateStoreMetrics {
    const keys = this.keys.span - this.free.length - this.idle;
    return {
      numRowsTotal: this.size,
      numRowsUpdated: this.updates,
      numRowsRemoved: this.removals,
      // Per group: key id, table slot and states (8 B each); per key in a window: a map entry, its
      // id's counters and its characters (estimated at 16 B); groups not loaded yet by their keys.
      memoryUsedBytes:
        this.size * (12 + 8 * this.aggregates) +
        keys * (40 + 12 + 32) +
        (this.loading?.unloadedChars ?? 0) * 2,
    };
  }

  /**
   * Every group as (composite key, group object), as an InMemoryStateStore of groups would hold it
   * (tests and tools; it builds an object per group).
   */
  *entries(): IterableIterator<[string, { keys: unknown[]; start: number; end: number; states: unknown[] }]> {
    for (const slab of this.windows()) {
      for (let s = 0; s < slab.n; s++) {
        const v = this.keys.value(slab.keyIds[s]!);
        yield [
          compositeKey(slab.start, v),
          { keys: [v], start: slab.start, end: slab.end, states: slab.states.map((c) => c[s]) },
        ];
      }
    }
  }

  // --- checkpoints ------------------------------------------------------------------------------

  trackChanges(): void {
    this.tracking = true;
  }

  beginCheckpoint(full: boolean): TableFreeze {
    if (full) this.loadAll();
    this.trackChanges();
    const seq = ++this.seq;
    const totals = { size: this.size, keyChars: this.keyChars };
    // A changelog says how far windows were evicted; a snapshot holds exactly what is left.
    const evicted = full || this.evictedUpTo === Number.NEGATIVE_INFINITY ? null : this.evictedUpTo;
    const freeze = new TableFreeze(this, seq, evicted, totals);
    for (const slab of this.slabs.values()) {
      if (full) {
        if (slab.n !== 0) freeze.hold(slab, new Uint8Array(slab.n).fill(1), null);
      } else if (slab.dirtyList.length !== 0) {
        freeze.hold(slab, slab.dirty!, slab.dirtyList);
      }
      slab.dirty = null;
      slab.dirtyList = [];
    }
    this.freezes.push(freeze);
    return freeze;
  }

  /** @internal A freeze encoded its last entry. */
  finished(freeze: TableFreeze): void {
    this.freezes = this.freezes.filter((f) => f !== freeze);
  }

  // --- restores ---------------------------------------------------------------------------------

  /**
   * Restores a chain of state files written by key group, into an empty table: every key group
   * now, or `lazy`ly — a key group when a row first looks for one of its keys, the rest by
   * {@link loadSome}; the groups of windows evicted meanwhile are dropped as they load.
   */
  restoreGroups(source: KeyGroupSource, lazy: boolean): void {
    this.beginRestore(source, this.size === 0, lazy);
  }

  protected loadPieces(l: KeyGroupLoad, _group: number, pieces: readonly KeyGroupPiece[]): void {
    const staging = new TableStaging(this.aggregates, this.deserializers);
    for (const piece of pieces) stage(staging, piece, l.source.decode(piece));
    staging.apply((v, start, end, states) => {
      l.unloadedSize--;
      l.unloadedChars -= String(start).length + 2 + keyTextChars(v);
      if (end <= this.evictedUpTo) {
        // Its window was evicted while the group waited: gone, as the next checkpoint's eviction says.
        this.removals++;
        return;
      }
      this.restoreGroup(v, start, end, states);
    });
  }

  private restoreGroup(v: unknown, start: number, end: number, states: readonly unknown[]): void {
    const slab = this.slabs.get(start) ?? this.newSlab(start, end);
    this.insert(slab, this.intern(v), states);
  }

  /** Restores entries of a file without key groups (formats 1 and 2); see {@link restored}. */
  loadChunk(keys: readonly string[], values: unknown, perEntry: boolean): void {
    this.staging ??= new TableStaging(this.aggregates, this.deserializers);
    if (perEntry) this.staging.addEntries(keys, values as unknown[]);
    else this.staging.addChunk(keys, values);
  }

  /** Restores the removal of keys, from a file without key groups. */
  loadRemoved(keys: Iterable<string>): void {
    this.staging ??= new TableStaging(this.aggregates, this.deserializers);
    this.staging.remove(keys);
  }

  /** The restore is over: entries of files without key groups go into their windows. */
  restored(): void {
    const staging = this.staging;
    this.staging = null;
    staging?.apply((v, start, end, states) => this.restoreGroup(v, start, end, states));
  }
}

/** Applies a decoded piece of a state file to a restore's staging. */
function stage(
  staging: TableStaging,
  piece: KeyGroupPiece,
  { keys, values }: { keys: string[]; values: unknown },
) {
  if (piece.tag === 'T') staging.addTable(values, piece.count);
  else if (piece.tag === 'X') staging.evictUpTo(values as number);
  else if (piece.tag === 'R') staging.remove(keys);
  else staging.addChunk(keys, values);
}
