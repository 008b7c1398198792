import { ErrorCode, MillraceError } from '../errors.js';
import {
  KEY_GROUPS,
  type KeyGroupLoad,
  type KeyGroupPiece,
  type KeyGroupSource,
  keyGroupOf,
  RestoredByKeyGroup,
} from './key-groups.js';
import { StateFreeze } from './state-freeze.js';
import type { CheckpointedStore, StateCodec, StateStoreMetrics } from './store-contract.js';

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
export class InMemoryStateStore<V> extends RestoredByKeyGroup implements StateStore<V>, CheckpointedStore {
  /**
   * One map per key group (see key-groups.ts): a snapshot walks them in order, so its pieces come
   * out a key group at a time, and a restore hands each group its rebuilt map as it is.
   */
  private readonly maps: Map<string, V>[] = Array.from({ length: KEY_GROUPS }, () => new Map());
  /** Per key group, the keys written and removed since the last checkpoint began (tracking on). */
  private written: Map<string, V>[] | null = UNTRACKED;
  private removed: Set<string>[] | null = UNTRACKED;
  /** The last key hashed, and its key group: an operator mostly gets, then puts, the same key. */
  private lastKey = '';
  private lastGroup = keyGroupOf('', KEY_GROUPS);
  private updates = 0;
  private removals = 0;
  private keyChars = 0;
  /** Checkpoints being encoded, oldest first: get, put and remove copy on touch for each. */
  private freezes: StateFreeze<V>[] = [];
  /** Lists of keys queued by {@link removeLater}, oldest first, and the next one's position. */
  private queued: string[][] = [];
  private queuedAt = 0;
  /** Hears each entry a lazy restore loads (see {@link keepRestored}); a method: V stays covariant. */
  private restoreFilter: { keep(key: string, value: V): boolean } | null = null;
  private lazy = false;

  /**
   * @param bytesPerValue an estimate of one value's size, for memoryUsedBytes.
   * @param codec how values are checkpointed (identity: values are immutable plain data).
   */
  constructor(
    private readonly bytesPerValue = 64,
    private readonly codec: StateCodec<V> = { encode: (v) => v, decode: (d) => d as V },
  ) {
    super();
  }

  /** Starts recording the keys written and removed, for changelog checkpoints. */
  trackChanges(): void {
    this.written ??= perGroup(() => new Map());
    this.removed ??= perGroup(() => new Set());
  }

  /**
   * The key group of a key about to be read or changed, made ready for it: loaded (a lazy
   * restore), and its value copied for the checkpoints being encoded (copy on touch).
   */
  private reach(key: string): number {
    let group = this.lastGroup;
    if (key !== this.lastKey) {
      group = keyGroupOf(key, KEY_GROUPS);
      this.lastKey = key;
      this.lastGroup = group;
    }
    if (this.loading?.isPending(group)) this.loadGroup(this.loading, group);
    if (this.freezes.length !== 0) this.detach(key, group);
    return group;
  }

  get(key: string): V | undefined {
    return this.maps[this.reach(key)]!.get(key);
  }

  put(key: string, value: V): void {
    const group = this.reach(key);
    const map = this.maps[group]!;
    const size = map.size;
    map.set(key, value);
    if (map.size !== size) this.keyChars += key.length;
    if (this.written !== null) {
      this.written[group]!.set(key, value);
      this.removed![group]!.delete(key);
    }
    this.updates++;
  }

  remove(key: string): void {
    const group = this.reach(key);
    if (!this.maps[group]!.delete(key)) return;
    this.keyChars -= key.length;
    if (this.written !== null) {
      this.written[group]!.delete(key);
      this.removed![group]!.add(key);
    }
    this.removals++;
  }

  /** Keys held, key groups not loaded yet included (see {@link restoreGroups}). */
  get size(): number {
    this.flushRemovals();
    let held = 0;
    for (const map of this.maps) held += map.size;
    return held + (this.loading?.unloadedSize ?? 0);
  }

  entries(): IterableIterator<[string, V]> {
    this.loadAll();
    this.flushRemovals();
    return allEntries(this.maps);
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
    const removed = full ? [] : this.removed!.map((keys) => (keys.size === 0 ? [] : [...keys]));
    const totals = { size: this.size, keyChars: this.keyChars + (this.loading?.unloadedChars ?? 0) };
    const freeze = full
      ? new StateFreeze<V>(this, this.codec, removed, totals, null, new Set(), this.maps)
      : new StateFreeze<V>(this, this.codec, removed, totals, this.written!, null, this.written!);
    this.freezes.push(freeze);
    this.written = perGroup(() => new Map());
    this.removed = perGroup(() => new Set());
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

  /** @internal The live map of a key group (a snapshot's copy on touch reads it). */
  groupMap(group: number): Map<string, V> {
    return this.maps[group]!;
  }

  /** Copy on touch: the key is about to change, so each freeze encodes its frozen value now. */
  private detach(key: string, group: number): void {
    const freezes = this.freezes;
    for (let i = 0; i < freezes.length; i++) freezes[i]!.touch(key, group);
  }

  // --- restores ---------------------------------------------------------------------------------

  /**
   * Has a lazy restore hear every restored entry as its group loads: `keep` keeps it (true) or
   * drops it (false: a removal, recorded in the next changelog, e.g. a window evicted while its
   * group waited). It must not use the store.
   */
  keepRestored(keep: (key: string, value: V) => boolean): void {
    this.restoreFilter = { keep };
  }

  /**
   * Restores the state of a chain of state files by key group (files of {@link KEY_GROUPS}
   * groups, into an empty store). Each key group's map is rebuilt apart, from its pieces of every
   * file applied in order: a group's map holds a few thousand keys where the state holds a
   * million, and nothing is copied afterwards.
   *
   * Not `lazy`: every group is loaded now. `lazy`: a group is loaded when a key of it is first
   * read, written or removed, when {@link loadSome} loads it in the background, or when something
   * needs every key ({@link entries}, a snapshot); `size` and the metrics count the groups not
   * loaded yet from the files' totals, and {@link keepRestored} hears each entry as it loads.
   */
  restoreGroups(source: KeyGroupSource, lazy: boolean): void {
    this.flushRemovals();
    this.lazy = lazy;
    this.beginRestore(source, this.size === 0, lazy);
  }

  protected loadPieces(l: KeyGroupLoad, group: number, pieces: readonly KeyGroupPiece[]): void {
    const codec = this.codec;
    // No operation reached the group before its load: its map is empty and becomes the one built.
    const entries = this.maps[group]!;
    for (const piece of pieces) {
      if (piece.tag === 'T' || piece.tag === 'X') {
        throw new MillraceError(
          ErrorCode.CHECKPOINT_CORRUPT,
          'a state file holds a group table, which this operator does not keep',
        );
      }
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
    const filter = this.lazy ? this.restoreFilter : null;
    if (filter !== null) {
      for (const [key, value] of entries) {
        if (filter.keep(key, value)) continue;
        // Dropped as it loads: a removal like any (no freeze holds it: none began since).
        entries.delete(key);
        chars -= key.length;
        this.removed?.[group]?.add(key);
        this.removals++;
      }
    }
    this.keyChars += chars;
  }

  /**
   * Restores checkpointed entries of a file without key groups (formats 1 and 2): a chunk of keys
   * and their values (`perEntry`: one value per key by `codec.encode`, as format-1 files hold them).
   * Files are loaded in order (a snapshot, then changelogs); nothing is tracked.
   */
  loadChunk(keys: readonly string[], values: unknown, perEntry: boolean): void {
    this.flushRemovals();
    const codec = this.codec;
    const decoded =
      !perEntry && codec.decodeChunk !== undefined
        ? codec.decodeChunk(values, keys.length)
        : (values as unknown[]).map((d) => codec.decode(d));
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const map = this.maps[keyGroupOf(key, KEY_GROUPS)]!;
      const size = map.size;
      map.set(key, decoded[i]!);
      // A new key grows the map (cheaper than a has() before every set).
      if (map.size !== size) this.keyChars += key.length;
    }
  }

  /** Restores the removal of checkpointed keys (a changelog's). Nothing is tracked. */
  loadRemoved(keys: Iterable<string>): void {
    this.flushRemovals();
    for (const key of keys) {
      if (this.maps[keyGroupOf(key, KEY_GROUPS)]!.delete(key)) this.keyChars -= key.length;
    }
  }
}

function perGroup<T>(make: () => T): T[] {
  return Array.from({ length: KEY_GROUPS }, make);
}

/** Every entry of the key groups' maps, group by group. */
function* allEntries<V>(maps: readonly Map<string, V>[]): IterableIterator<[string, V]> {
  for (const map of maps) yield* map.entries();
}
