/**
 * What the stores of operators' state (InMemoryStateStore, GroupTable) offer the checkpoint's
 * writer (`checkpoint/state-checkpointer.ts`), and how their values become checkpoint data.
 */
import type { KeyGroupSource } from './key-groups.js';

export interface StateStoreMetrics {
  numRowsTotal: number;
  /** Keys written since the store was created. */
  numRowsUpdated: number;
  /** Keys removed since the store was created. */
  numRowsRemoved: number;
  memoryUsedBytes: number;
}

/**
 * What the checkpointer needs of an operator's state (StateCheckpointer): an InMemoryStateStore,
 * or a GroupTable (an aggregation's groups in arrays). Both write and read the same state files.
 */
export interface CheckpointedStore {
  /** Starts recording the changes since each checkpoint, for changelogs. */
  trackChanges(): void;
  /** Freezes what the next checkpoint holds (every key, or the changes) and encodes it a slice at a time. */
  beginCheckpoint(full: boolean): StateCheckpoint;
  /** Restores files written by key group: every group now, or `lazy`ly (see InMemoryStateStore.restoreGroups). */
  restoreGroups(source: KeyGroupSource, lazy: boolean): void;
  /** Restores a chunk of a file without key groups (formats 1 and 2). */
  loadChunk(keys: readonly string[], values: unknown, perEntry: boolean): void;
  /** Restores removals of a file without key groups. */
  loadRemoved(keys: Iterable<string>): void;
  /** A lazy restore: loads up to `groups` key groups; true when none is left. */
  loadSome(groups: number): boolean;
  /** Key groups a lazy restore has left to load. */
  readonly keyGroupsToLoad: number;
}

/** One checkpoint being encoded in slices (see StateCheckpointer). */
export interface StateCheckpoint {
  /** Encodes up to `budget` entries; true once all are. */
  encodeSome(budget: number): boolean;
  /** Pieces encoded since the last call that are full, or every piece (`all`). */
  drain(all?: boolean): EncodedChunk[];
  /** Once all is encoded: what is left, about `maxEntries` entries' worth per call. */
  drainSome(maxEntries: number): EncodedChunk[];
  /** Per key group, the keys removed since the previous checkpoint began (complete once encoded). */
  readonly removed: readonly (readonly string[])[];
  /** Keys held at the epoch's end, and their characters. */
  readonly totals: { readonly size: number; readonly keyChars: number };
  /** A group table's: the watermark it evicted windows up to, if any (an `X` piece). */
  readonly evictedUpTo?: number | null;
}

/**
 * Entries of one key group encoded for a checkpoint: their keys, and their values as one chunk
 * (see StateCodec).
 */
export interface EncodedChunk {
  readonly group: number;
  /** The entries' keys; null for a group table's entries, which keep none (a `T` piece). */
  readonly keys: string[] | null;
  readonly count: number;
  /** The entries' values as one chunk; for a group table's entries, its `T` piece's msgpack bytes. */
  readonly values: unknown;
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
