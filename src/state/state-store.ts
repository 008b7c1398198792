import { KEY_GROUPS, type KeyGroupSource, keyGroupOf, PIECE_ENTRIES } from './key-groups.js';

/**
 * State of one stateful operator in one partition. The engine's operators keep everything they
 * remember across rows here, so the store is the unit of checkpointing: with checkpointing on, it
 * records which keys were written or removed since the last checkpoint (its changelog), and it can
 * be replaced by a disk-backed implementation of the same interface.
 */
export interface StateStore<V> {
  get(key: string): V | undefined;
  /** Sets a key's value (also to mark an in-place update of the same object as changed). */
  put(key: string, value: V): void;
  remove(key: string): void;
  readonly size: number;
  entries(): IterableIterator<[string, V]>;
  /** Counters since the store was created. */
  metrics(): StateStoreMetrics;
}

export interface StateStoreMetrics {
  numRowsTotal: number;
  /** Keys written since the store was created. */
  numRowsUpdated: number;
  /** Keys removed since the store was created. */
  numRowsRemoved: number;
  memoryUsedBytes: number;
}

/**
 * How an operator's values become checkpoint data and back. `encode` must return data detached
 * from the live value (later in-place updates must not change it) that msgpack can carry.
 */
export interface StateCodec<V> {
  encode(value: V): unknown;
  decode(data: unknown): V;
  /**
   * Optional, with {@link decodeChunk}: an encoder that packs a chunk of values into one piece of
   * checkpoint data — e.g. one array per field instead of one small array per value, which is far
   * cheaper to write and to decode (fewer objects). Without it a chunk is the array of values
   * encoded by `encode`.
   */
  chunkEncoder?(): StateChunkEncoder<V>;
  /** The `count` values of a chunk packed by a {@link chunkEncoder}, in order. */
  decodeChunk?(data: unknown, count: number): V[];
}

/** Packs the values of one chunk of checkpoint data (see {@link StateCodec.chunkEncoder}). */
export interface StateChunkEncoder<V> {
  /** Appends a value, detached: in-place updates of the value afterwards must not change the chunk. */
  add(value: V): void;
  /** The chunk of every value added, in order. */
  finish(): unknown;
}

/** A chunk as the array of values encoded one by one: the default. */
class ArrayChunkEncoder<V> implements StateChunkEncoder<V> {
  private readonly values: unknown[] = [];
  constructor(private readonly codec: StateCodec<V>) {}
  add(value: V): void {
    this.values.push(this.codec.encode(value));
  }
  finish(): unknown {
    return this.values;
  }
}

/**
 * Entries of one key group encoded for a checkpoint: their keys, and their values as one chunk
 * (see StateCodec).
 */
export interface EncodedChunk {
  readonly group: number;
  readonly keys: string[];
  readonly values: unknown;
}

/** Values written while no checkpoint tracks changes. */
const UNTRACKED = null;

/**
 * The in-memory store: a hash map per (operator, partition). Memory use is an estimate: key
 * characters plus a per-entry size the operator gives for its values.
 *
 * Checkpoints (when enabled with {@link trackChanges}) are taken without stopping the operator:
 * {@link beginCheckpoint} freezes the set of keys to write as it stands at the epoch's end, and the
 * returned {@link StateFreeze} encodes them a slice at a time while rows keep arriving. A key of
 * the frozen set that the operator reads before its turn (to update its value in place) is encoded
 * first, with the value it had at the epoch's end — copy on touch.
 *
 * A changelog's frozen set is the map of keys written in the epoch. A snapshot's is every key, and
 * copying the map for it would stop the rows for as long as the copy takes (≈ 1 µs a key: ≈ 0.5–1 s
 * for 500 000 keys, measured), so a snapshot walks the live map instead and remembers the keys
 * touched since the epoch's end:
 *
 * - the first touch of a key encodes the value it has then, if it has one — the value of the
 *   epoch's end, since nothing changed it before — and marks it touched; a key created after the
 *   epoch's end is marked touched at its creation, with nothing to encode;
 * - the walk (a Map iterator, which visits entries in insertion order, skips entries deleted before
 *   it reaches them and visits entries added meanwhile) encodes every key not marked touched.
 *
 * So every key of the epoch's end is encoded with its value then, and no later key is. A key the
 * walk encoded and the operator touches afterwards is encoded a second time, with the same value:
 * the restore sets it twice.
 *
 * Several checkpoints may be in progress at once (a snapshot of 1 M keys takes longer than a 1-s
 * epoch; finishing it at the next epoch's end would stop the rows for seconds). Each freeze keeps
 * its own touched set or pending map and sees every touch, so each encodes its own epoch's end
 * whatever the others do: a touch is the first one since *its* freeze, or it is not.
 */
export class InMemoryStateStore<V> implements StateStore<V> {
  private readonly map = new Map<string, V>();
  private written: Map<string, V> | null = UNTRACKED;
  private removed: Set<string> | null = UNTRACKED;
  private updates = 0;
  private removals = 0;
  private keyChars = 0;
  /** Checkpoints being encoded, oldest first: get, put and remove copy on touch for each. */
  private freezes: StateFreeze<V>[] = [];
  /** Lists of keys queued by {@link removeLater}, oldest first, and the next one's position. */
  private queued: string[][] = [];
  private queuedAt = 0;
  /** A restore by key group with groups still to load (see {@link restoreGroups}), or null. */
  private loading: GroupLoad<V> | null = null;

  /**
   * @param bytesPerValue an estimate of one value's size, for memoryUsedBytes.
   * @param codec how values are checkpointed (identity: values are immutable plain data).
   */
  constructor(
    private readonly bytesPerValue = 64,
    private readonly codec: StateCodec<V> = { encode: (v) => v, decode: (d) => d as V },
  ) {}

  /** Starts recording the keys written and removed, for changelog checkpoints. */
  trackChanges(): void {
    this.written ??= new Map();
    this.removed ??= new Set();
  }

  get(key: string): V | undefined {
    if (this.loading !== null) this.ensureLoaded(key);
    if (this.freezes.length !== 0) this.detach(key);
    return this.map.get(key);
  }

  put(key: string, value: V): void {
    if (this.loading !== null) this.ensureLoaded(key);
    if (this.freezes.length !== 0) this.detach(key);
    if (!this.map.has(key)) this.keyChars += key.length;
    this.map.set(key, value);
    if (this.written !== null) {
      this.written.set(key, value);
      this.removed!.delete(key);
    }
    this.updates++;
  }

  remove(key: string): void {
    if (this.loading !== null) this.ensureLoaded(key);
    if (this.freezes.length !== 0) this.detach(key);
    if (!this.map.delete(key)) return;
    this.keyChars -= key.length;
    if (this.written !== null) {
      this.written.delete(key);
      this.removed!.add(key);
    }
    this.removals++;
  }

  /** Keys held, key groups not loaded yet included (see {@link restoreGroups}). */
  get size(): number {
    this.flushRemovals();
    return this.map.size + (this.loading?.unloadedSize ?? 0);
  }

  entries(): IterableIterator<[string, V]> {
    this.loadAll();
    this.flushRemovals();
    return this.map.entries();
  }

  metrics(): StateStoreMetrics {
    const size = this.size;
    const chars = this.keyChars + (this.loading?.unloadedChars ?? 0);
    return {
      numRowsTotal: size,
      numRowsUpdated: this.updates,
      numRowsRemoved: this.removals,
      // Map entry overhead (≈ 40 B) + key characters (2 B each) + the value.
      memoryUsedBytes: size * (40 + this.bytesPerValue) + chars * 2,
    };
  }

  // --- removals spread over time ----------------------------------------------------------------

  /**
   * Queues keys for removal; {@link removeSome} removes them a few at a time. Removing a large set
   * at once — a window's eviction, ≈ 30 000 keys a second a partition in E2 — stops the owner's
   * row path for tens of ms (a cache miss or more a key); spread over the next rows it costs each
   * row a few hundred ns. Everything that shows the store's contents (size, entries, metrics,
   * checkpoints, restores) removes the queued keys first, so what the store shows is exactly what
   * removing them at once would show. The owner must not get, put or remove a queued key before
   * it is removed: it calls {@link flushRemovals} first when a row could reach one. The store
   * keeps `keys` (it must not change afterwards).
   */
  removeLater(keys: string[]): void {
    if (keys.length !== 0) this.queued.push(keys);
  }

  /** Whether keys wait for removal (see {@link removeLater}). */
  get removing(): boolean {
    return this.queued.length !== 0;
  }

  /** Removes up to `budget` queued keys, oldest first. */
  removeSome(budget: number): void {
    const queued = this.queued;
    while (budget > 0 && queued.length !== 0) {
      const keys = queued[0]!;
      let i = this.queuedAt;
      const stop = Math.min(keys.length, i + budget);
      budget -= stop - i;
      for (; i < stop; i++) this.remove(keys[i]!);
      if (i === keys.length) {
        queued.shift();
        this.queuedAt = 0;
      } else {
        this.queuedAt = i;
      }
    }
  }

  /** Removes every queued key now. */
  flushRemovals(): void {
    if (this.queued.length !== 0) this.removeSome(Number.POSITIVE_INFINITY);
  }

  // --- checkpoints ------------------------------------------------------------------------------

  /**
   * Freezes what the next checkpoint holds: every key (`full`) or the changes since the last
   * checkpoint began. Changes are tracked from here on. Checkpoints still being encoded go on:
   * each freeze encodes its own epoch's end.
   */
  beginCheckpoint(full: boolean): StateFreeze<V> {
    // A snapshot walks every key: the groups a restore has not loaded yet are loaded first.
    if (full) this.loadAll();
    // Queued removals belong to the epoch that ends here.
    this.flushRemovals();
    this.trackChanges();
    const removed = full ? [] : [...this.removed!];
    const totals = { size: this.size, keyChars: this.keyChars + (this.loading?.unloadedChars ?? 0) };
    const freeze = full
      ? new StateFreeze<V>(this, this.codec, removed, totals, null, new Set(), this.map.entries())
      : new StateFreeze<V>(this, this.codec, removed, totals, this.written!, null, this.written!.entries());
    this.freezes.push(freeze);
    this.written = new Map();
    this.removed = new Set();
    return freeze;
  }

  /** How many checkpoints are being encoded. */
  get checkpointing(): number {
    return this.freezes.length;
  }

  /** @internal A freeze encoded its last key: touches no longer concern it. */
  finished(freeze: StateFreeze<V>): void {
    this.freezes = this.freezes.filter((f) => f !== freeze);
  }

  /** @internal The live value of a key (a snapshot's copy on touch reads it). */
  peek(key: string): V | undefined {
    return this.map.get(key);
  }

  /** @internal Whether the live map holds a key. */
  holds(key: string): boolean {
    return this.map.has(key);
  }

  /** Copy on touch: the key is about to change, so each freeze encodes its frozen value now. */
  private detach(key: string): void {
    const freezes = this.freezes;
    for (let i = 0; i < freezes.length; i++) freezes[i]!.touch(key);
  }

  // --- restores ---------------------------------------------------------------------------------

  /**
   * Restores the state of a chain of state files by key group. Each key group is rebuilt apart —
   * its pieces from every file applied in order to a small map, so keys the later files remove
   * never reach the store's large map — and then its entries go into the store.
   *
   * Without `onEntry` every group is loaded now. With it the restore is lazy: a group is loaded
   * when a key of it is first read, written or removed, when {@link loadSome} loads it in the
   * background, or when something needs every key ({@link entries}, a snapshot); `size` and the
   * metrics count the groups not loaded yet from the files' totals. `onEntry` hears every restored
   * entry as its group loads, and keeps it (true) or drops it (false: a removal, recorded in the
   * next changelog, e.g. a window evicted while its group waited). It must not use the store.
   */
  restoreGroups(source: KeyGroupSource, onEntry: ((key: string, value: V) => boolean) | null): void {
    this.flushRemovals();
    this.loading = {
      source,
      pending: source.pieces.map(() => true),
      left: source.groups,
      next: 0,
      unloadedSize: source.size,
      unloadedChars: source.keyChars,
      filter: onEntry === null ? null : { keep: onEntry },
    };
    if (onEntry === null) this.loadAll();
  }

  /** Whether a lazy restore has key groups left to load. */
  get restoring(): boolean {
    return this.loading !== null;
  }

  /** How many key groups a lazy restore has left to load. */
  get keyGroupsToLoad(): number {
    return this.loading?.left ?? 0;
  }

  /** Loads every key group a lazy restore has left. */
  loadAll(): void {
    this.loadSome(Number.POSITIVE_INFINITY);
  }

  /** Loads up to `groups` of the key groups a lazy restore has left; true when none is left. */
  loadSome(groups: number): boolean {
    for (let n = 0; n < groups; n++) {
      const l = this.loading;
      if (l === null) return true;
      while (!l.pending[l.next]) l.next++;
      this.loadGroup(l, l.next);
    }
    return this.loading === null;
  }

  private ensureLoaded(key: string): void {
    const l = this.loading!;
    const group = keyGroupOf(key, l.source.groups);
    if (l.pending[group]) this.loadGroup(l, group);
  }

  private loadGroup(l: GroupLoad<V>, group: number): void {
    l.pending[group] = false;
    const pieces = l.source.pieces[group]!;
    l.source.pieces[group] = [];
    const codec = this.codec;
    const entries = new Map<string, V>();
    for (const piece of pieces) {
      const { keys, values } = l.source.decode(piece);
      if (piece.removal) {
        for (let i = 0; i < keys.length; i++) entries.delete(keys[i]!);
        continue;
      }
      if (codec.decodeChunk !== undefined) {
        const decoded = codec.decodeChunk(values, keys.length);
        for (let i = 0; i < keys.length; i++) entries.set(keys[i]!, decoded[i]!);
      } else {
        const data = values as unknown[];
        for (let i = 0; i < keys.length; i++) entries.set(keys[i]!, codec.decode(data[i]));
      }
    }
    let chars = 0;
    for (const key of entries.keys()) chars += key.length;
    l.unloadedSize -= entries.size;
    l.unloadedChars -= chars;
    if (--l.left === 0) this.loading = null;
    const map = this.map;
    const filter = l.filter;
    for (const [key, value] of entries) {
      if (filter === null || filter.keep(key, value)) {
        map.set(key, value);
        this.keyChars += key.length;
      } else {
        // Dropped as it loads: a removal like any (no freeze holds it: none began since).
        this.removed?.add(key);
        this.removals++;
      }
    }
  }

  /**
   * Restores checkpointed entries of a file without key groups (formats 1 and 2): a chunk of keys
   * and their values (`perEntry`: one value per key by `codec.encode`, as format-1 files hold them).
   * Files are loaded in order (a snapshot, then changelogs); nothing is tracked.
   */
  loadChunk(keys: readonly string[], values: unknown, perEntry: boolean): void {
    this.flushRemovals();
    const map = this.map;
    const codec = this.codec;
    let chars = 0;
    if (!perEntry && codec.decodeChunk !== undefined) {
      const decoded = codec.decodeChunk(values, keys.length);
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        const size = map.size;
        map.set(key, decoded[i]!);
        // A new key grows the map (cheaper than a has() before every set).
        if (map.size !== size) chars += key.length;
      }
    } else {
      const data = values as unknown[];
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        const size = map.size;
        map.set(key, codec.decode(data[i]));
        if (map.size !== size) chars += key.length;
      }
    }
    this.keyChars += chars;
  }

  /** Restores the removal of checkpointed keys (a changelog's). Nothing is tracked. */
  loadRemoved(keys: Iterable<string>): void {
    this.flushRemovals();
    for (const key of keys) {
      if (this.map.delete(key)) this.keyChars -= key.length;
    }
  }
}

/**
 * One checkpoint being encoded (see {@link InMemoryStateStore}): its frozen keys, the walk over
 * them, and the entries encoded and not drained yet.
 */
export class StateFreeze<V> {
  /** Per key group, the entries encoded and not drained yet. */
  private readonly keys: (string[] | undefined)[] = new Array(KEY_GROUPS);
  private readonly values: (StateChunkEncoder<V> | undefined)[] = new Array(KEY_GROUPS);
  /** Key groups that reached PIECE_ENTRIES undrained entries. */
  private full: number[] = [];
  /** Where {@link drainSome} goes on. */
  private restAt = 0;
  private done = false;

  /** @internal Made by {@link InMemoryStateStore.beginCheckpoint}. */
  constructor(
    private readonly store: InMemoryStateStore<V>,
    private readonly codec: StateCodec<V>,
    /** The keys removed since the previous checkpoint began (none for a snapshot). */
    readonly removed: readonly string[],
    /** The keys the state held at the epoch's end, and their characters. */
    readonly totals: { readonly size: number; readonly keyChars: number },
    /** A changelog: the keys written in its epoch and not encoded yet. */
    private readonly pending: Map<string, V> | null,
    /** A snapshot: the keys touched since its epoch's end. */
    private readonly touched: Set<string> | null,
    /** Walks `pending` (changelog) or the live map (snapshot). */
    private readonly walk: IterableIterator<[string, V]>,
  ) {}

  private encoder(): StateChunkEncoder<V> {
    const codec = this.codec;
    return codec.chunkEncoder === undefined ? new ArrayChunkEncoder(codec) : codec.chunkEncoder();
  }

  /** Whether every frozen key is encoded. */
  get encoded(): boolean {
    return this.done;
  }

  /** Encodes up to `budget` frozen entries; returns true once every one is. */
  encodeSome(budget: number): boolean {
    if (this.done) return true;
    const it = this.walk;
    const pending = this.pending;
    const touched = this.touched;
    // The budget counts entries visited, encoded or not, so a slice stays short.
    for (let n = 0; n < budget; n++) {
      const next = it.next();
      if (next.done) {
        this.done = true;
        this.store.finished(this);
        return true;
      }
      const [key, value] = next.value;
      if (pending !== null) {
        pending.delete(key);
      } else if (touched!.has(key)) {
        // Encoded at its first touch, or created after the epoch's end.
        continue;
      }
      this.add(key, value);
    }
    return false;
  }

  /** Encodes an entry into its key group's chunk. */
  private add(key: string, value: V): void {
    const group = keyGroupOf(key, KEY_GROUPS);
    let keys = this.keys[group];
    if (keys === undefined) {
      keys = [];
      this.keys[group] = keys;
      this.values[group] = this.encoder();
    }
    keys.push(key);
    this.values[group]!.add(value);
    if (keys.length === PIECE_ENTRIES) this.full.push(group);
  }

  /**
   * Entries encoded since the last call (by {@link encodeSome} or on touch), a chunk per key group,
   * values packed as one chunk each: of the groups that collected PIECE_ENTRIES entries, or of
   * every group (`all`, when the checkpoint is written).
   */
  drain(all = false): EncodedChunk[] {
    const out: EncodedChunk[] = [];
    if (all) {
      for (let g = 0; g < KEY_GROUPS; g++) this.take(g, out);
    } else {
      for (const g of this.full) this.take(g, out);
    }
    this.full = [];
    return out;
  }

  /**
   * Once every key is encoded: the chunks of the groups not drained yet, in group order, about
   * `maxEntries` entries' worth per call (so packing them is sliced too); none once all are.
   */
  drainSome(maxEntries: number): EncodedChunk[] {
    const out: EncodedChunk[] = [];
    let taken = 0;
    while (this.restAt < KEY_GROUPS && taken < maxEntries) taken += this.take(this.restAt++, out);
    return out;
  }

  /** Moves a key group's encoded entries to `out` as a chunk; returns how many. */
  private take(group: number, out: EncodedChunk[]): number {
    const keys = this.keys[group];
    if (keys === undefined) return 0;
    out.push({ group, keys, values: this.values[group]!.finish() });
    this.keys[group] = undefined;
    this.values[group] = undefined;
    return keys.length;
  }

  /** @internal Copy on touch: `key` is about to change (see the store's class comment). */
  touch(key: string): void {
    const pending = this.pending;
    if (pending !== null) {
      const value = pending.get(key);
      if (value === undefined && !pending.has(key)) return;
      this.add(key, value as V);
      pending.delete(key);
      return;
    }
    // A snapshot: only the first touch since the epoch's end counts.
    const touched = this.touched!;
    if (touched.has(key)) return;
    touched.add(key);
    const value = this.store.peek(key);
    if (value === undefined && !this.store.holds(key)) return;
    this.add(key, value as V);
  }
}

/** A restore by key group in progress (see {@link InMemoryStateStore.restoreGroups}). */
interface GroupLoad<V> {
  readonly source: KeyGroupSource;
  /** Per key group: not loaded yet. */
  readonly pending: boolean[];
  left: number;
  /** Where {@link InMemoryStateStore.loadSome} looks for the next group to load. */
  next: number;
  /** Keys (and their characters) of the groups not loaded yet, at the restored version. */
  unloadedSize: number;
  unloadedChars: number;
  /** Hears each restored entry and keeps it or drops it (a method: the store stays covariant in V). */
  readonly filter: { keep(key: string, value: V): boolean } | null;
}
