/**
 * Key groups: a partition's state keys hashed into a fixed number of groups, as Flink does. State
 * files (format 3) write each group's entries and removals as pieces of their own, so a restore
 * can rebuild one group at a time — all of it before the first row, or a group when a row first
 * needs one of its keys (see InMemoryStateStore.restoreGroups).
 */

/** Key groups per partition in the files written (a power of two; files say which count they use). */
export const KEY_GROUPS = 256;

/**
 * The key group of `key` among `groups` (a power of two): FNV-1a over the key's UTF-16 code units.
 * Stable across versions: files written with it are read back with it.
 */
export function keyGroupOf(key: string, groups: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) & (groups - 1);
}

/** Entries of one key group a checkpoint collects before it packs them as a piece. */
export const PIECE_ENTRIES = 2048;

/** One piece of a key group in a state file: entries written, or keys removed, still encoded. */
export interface KeyGroupPiece {
  readonly removal: boolean;
  readonly count: number;
  /** The piece's msgpack bytes: `[keys, values]` for entries, `keys` for removals. */
  readonly data: Uint8Array;
}

/** What a chain of state files (a snapshot, then changelogs) restores, by key group. */
export interface KeyGroupSource {
  readonly groups: number;
  /** Per key group, its pieces in restore order (file by file, oldest first). */
  readonly pieces: KeyGroupPiece[][];
  /** Keys the state holds at the restored version, and their characters (the newest file's totals). */
  readonly size: number;
  readonly keyChars: number;
  /** Decodes a piece: its keys, and its entries' values as one chunk (see StateCodec.decodeChunk). */
  decode(piece: KeyGroupPiece): { keys: string[]; values: unknown };
}
