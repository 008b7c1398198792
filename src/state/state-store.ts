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

/** Entries encoded for a checkpoint: their keys, and their values as one chunk (see StateCodec). */
export interface EncodedChunk {
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
    if (this.freezes.length !== 0) this.detach(key);
    return this.map.get(key);
  }

  put(key: string, value: V): void {
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
    if (this.freezes.length !== 0) this.detach(key);
    if (!this.map.delete(key)) return;
    this.keyChars -= key.length;
    if (this.written !== null) {
      this.written.delete(key);
      this.removed!.add(key);
    }
    this.removals++;
  }

  get size(): number {
    this.flushRemovals();
    return this.map.size;
  }

  entries(): IterableIterator<[string, V]> {
    this.flushRemovals();
    return this.map.entries();
  }

  metrics(): StateStoreMetrics {
    this.flushRemovals();
    return {
      numRowsTotal: this.map.size,
      numRowsUpdated: this.updates,
      numRowsRemoved: this.removals,
      // Map entry overhead (≈ 40 B) + key characters (2 B each) + the value.
      memoryUsedBytes: this.map.size * (40 + this.bytesPerValue) + this.keyChars * 2,
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
    // Queued removals belong to the epoch that ends here.
    this.flushRemovals();
    this.trackChanges();
    const removed = full ? [] : [...this.removed!];
    const freeze = full
      ? new StateFreeze<V>(this, this.codec, removed, null, new Set(), this.map.entries())
      : new StateFreeze<V>(this, this.codec, removed, this.written!, null, this.written!.entries());
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

  /**
   * Restores checkpointed entries: a chunk of keys and their values, as {@link StateFreeze.drain}
   * gave them (`perEntry`: one value per key by `codec.encode`, as format-1 files hold them).
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
  private keys: string[] = [];
  private values: StateChunkEncoder<V>;
  private done = false;

  /** @internal Made by {@link InMemoryStateStore.beginCheckpoint}. */
  constructor(
    private readonly store: InMemoryStateStore<V>,
    private readonly codec: StateCodec<V>,
    /** The keys removed since the previous checkpoint began (none for a snapshot). */
    readonly removed: readonly string[],
    /** A changelog: the keys written in its epoch and not encoded yet. */
    private readonly pending: Map<string, V> | null,
    /** A snapshot: the keys touched since its epoch's end. */
    private readonly touched: Set<string> | null,
    /** Walks `pending` (changelog) or the live map (snapshot). */
    private readonly walk: IterableIterator<[string, V]>,
  ) {
    this.values = this.encoder();
  }

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
    const keys = this.keys;
    const values = this.values;
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
      keys.push(key);
      values.add(value);
    }
    return false;
  }

  /**
   * The entries encoded since the last call (by {@link encodeSome} or on touch), their values
   * packed as one chunk; null when there are none.
   */
  drain(): EncodedChunk | null {
    const keys = this.keys;
    if (keys.length === 0) return null;
    const values = this.values.finish();
    this.keys = [];
    this.values = this.encoder();
    return { keys, values };
  }

  /** @internal Copy on touch: `key` is about to change (see the store's class comment). */
  touch(key: string): void {
    const pending = this.pending;
    if (pending !== null) {
      const value = pending.get(key);
      if (value === undefined && !pending.has(key)) return;
      this.keys.push(key);
      this.values.add(value as V);
      pending.delete(key);
      return;
    }
    // A snapshot: only the first touch since the epoch's end counts.
    const touched = this.touched!;
    if (touched.has(key)) return;
    touched.add(key);
    const value = this.store.peek(key);
    if (value === undefined && !this.store.holds(key)) return;
    this.keys.push(key);
    this.values.add(value as V);
  }
}
