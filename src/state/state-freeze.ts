/**
 * A checkpoint of an InMemoryStateStore being encoded: its frozen keys, walked a key group at a
 * time, and copy on touch (see the store's class comment for the rules it keeps).
 */
import { KEY_GROUPS, PIECE_ENTRIES } from './key-groups.js';
import { PieceBuffers } from './piece-buffers.js';
import type { EncodedChunk, StateCheckpoint, StateChunkEncoder, StateCodec } from './store-contract.js';

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

/** Entries of one key group encoded on touch, out of walk order. */
class TouchedPiece<V> {
  readonly keys: string[] = [];
  constructor(readonly values: StateChunkEncoder<V>) {}
  get count(): number {
    return this.keys.length;
  }
  chunk(group: number): EncodedChunk {
    return { group, keys: this.keys, count: this.keys.length, values: this.values.finish() };
  }
}

/** What a freeze needs of its store (an InMemoryStateStore). */
export interface FrozenStore<V> {
  /** A freeze encoded its last key: touches no longer concern it. */
  finished(freeze: StateFreeze<V>): void;
  /** The live map of a key group (a snapshot's copy on touch reads it). */
  groupMap(group: number): Map<string, V>;
}

/**
 * One checkpoint being encoded (see InMemoryStateStore): its frozen keys, the walk over
 * them a key group at a time, and the entries encoded and not drained yet, as pieces of one key
 * group each.
 */
export class StateFreeze<V> implements StateCheckpoint {
  /** The walk's current piece: entries of one key group, in walk order. */
  private group = -1;
  private keys: string[] = [];
  private values: StateChunkEncoder<V> | null = null;
  /** Pieces the walk finished, and entries encoded on touch (out of walk order), not drained yet. */
  private readonly pieces = new PieceBuffers(() => new TouchedPiece(this.encoder()));
  /** The walk: the key group walked and its map's iterator. */
  private mapAt = 0;
  private it: IterableIterator<[string, V]> | null = null;
  private done = false;

  /** @internal Made by InMemoryStateStore.beginCheckpoint. */
  constructor(
    private readonly store: FrozenStore<V>,
    private readonly codec: StateCodec<V>,
    /** Per key group, the keys removed since the previous checkpoint began (none for a snapshot). */
    readonly removed: readonly (readonly string[])[],
    /** The keys the state held at the epoch's end, and their characters. */
    readonly totals: { readonly size: number; readonly keyChars: number },
    /** A changelog: per key group, the keys written in its epoch and not encoded yet. */
    private readonly pending: readonly Map<string, V>[] | null,
    /** A snapshot: the keys touched since its epoch's end. */
    private readonly touched: Set<string> | null,
    /** What is walked, a key group after the other: the live maps (snapshot), or `pending`. */
    private readonly walk: readonly Map<string, V>[],
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
    const pending = this.pending;
    // The budget counts entries visited, encoded or not, so a slice stays short.
    const maps = this.walk;
    this.it ??= maps[0]!.entries();
    for (let n = 0; n < budget; n++) {
      let next = this.it.next();
      while (next.done === true) {
        if (++this.mapAt === KEY_GROUPS) return this.finish();
        this.it = maps[this.mapAt]!.entries();
        next = this.it.next();
      }
      const [key, value] = next.value;
      const group = this.mapAt;
      if (pending !== null) {
        // The walk is over `pending` itself: the entry goes as it is encoded (a Map iterator
        // goes on past a deleted entry), and one encoded on touch is gone before the walk comes.
        pending[group]!.delete(key);
      } else if (this.touched!.has(key)) {
        // Encoded at its first touch, or created after the epoch's end.
        continue;
      }
      if (group !== this.group || this.keys.length === PIECE_ENTRIES) this.cut(group);
      this.keys.push(key);
      this.values!.add(value);
    }
    return false;
  }

  private finish(): true {
    this.done = true;
    this.cut(-1);
    this.store.finished(this);
    return true;
  }

  /** Ends the walk's current piece; the next one is of `group`. */
  private cut(group: number): void {
    if (this.keys.length !== 0)
      this.pieces.push({
        group: this.group,
        keys: this.keys,
        count: this.keys.length,
        values: this.values!.finish(),
      });
    this.group = group;
    this.keys = [];
    this.values = group < 0 ? null : this.encoder();
  }

  /**
   * Entries encoded since the last call (by {@link encodeSome} or on touch), as pieces of one key
   * group each: the pieces the walk finished, and touched entries of groups that collected
   * PIECE_ENTRIES; or everything encoded (`all`, when the checkpoint is written).
   */
  drain(all = false): EncodedChunk[] {
    if (all && !this.done) this.cut(this.group);
    return this.pieces.drain(all);
  }

  /**
   * Once every key is encoded: what is left to drain, about `maxEntries` entries' worth per call
   * (so packing it is sliced too); none once all is drained.
   */
  drainSome(maxEntries: number): EncodedChunk[] {
    return this.pieces.drainSome(maxEntries);
  }

  /** Encodes an entry touched out of walk order into its key group's touched piece. */
  private add(key: string, value: V, group: number): void {
    const piece = this.pieces.of(group);
    piece.keys.push(key);
    piece.values.add(value);
    this.pieces.added(group, piece);
  }

  /** @internal Copy on touch: `key` (of key group `group`) is about to change (see the store's class comment). */
  touch(key: string, group: number): void {
    const pending = this.pending;
    if (pending !== null) {
      const map = pending[group]!;
      const value = map.get(key);
      if (value === undefined && !map.has(key)) return;
      this.add(key, value as V, group);
      map.delete(key);
      return;
    }
    // A snapshot: only the first touch since the epoch's end counts.
    const touched = this.touched!;
    if (touched.has(key)) return;
    touched.add(key);
    const map = this.store.groupMap(group);
    const value = map.get(key);
    if (value === undefined && !map.has(key)) return;
    this.add(key, value as V, group);
  }
}
