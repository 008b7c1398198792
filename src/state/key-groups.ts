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
  return fnv(FNV_START, key) & (groups - 1);
}

/** FNV-1a's state before any character. */
export const FNV_START = 0x811c9dc5;

/**
 * FNV-1a's state `h` carried on over `text`: `fnv(fnv(FNV_START, a), b) & (groups − 1)` is the key
 * group of `a + b`, without building the string.
 */
export function fnv(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Entries of one key group a checkpoint collects before it packs them as a piece. */
export const PIECE_ENTRIES = 2048;

/**
 * One piece of a key group in a state file, still encoded: entries written (`K`), keys removed
 * (`R`), a group table's entries (`T`), or a group table's windows evicted (`X`, every key group's).
 */
export interface KeyGroupPiece {
  readonly tag: 'K' | 'R' | 'T' | 'X';
  /** Keys removed (`R`). */
  readonly removal: boolean;
  readonly count: number;
  /**
   * The piece's msgpack bytes: `[keys, values]` for entries, `keys` for removals, the values of a
   * table's entries, or the watermark a table evicted its windows up to.
   */
  readonly data: Uint8Array;
}

/** What a chain of state files (a snapshot, then changelogs) restores, by key group. */
export interface KeyGroupSource {
  readonly groups: number;
  /** Per key group, its pieces in restore order: file by file, oldest first, a file's `X` pieces first. */
  readonly pieces: KeyGroupPiece[][];
  /** Keys the state holds at the restored version, and their characters (the newest file's totals). */
  readonly size: number;
  readonly keyChars: number;
  /**
   * Decodes a piece: its keys, and its entries' values as one chunk (see StateCodec.decodeChunk);
   * no keys for `T` and `X` pieces, whose values are all.
   */
  decode(piece: KeyGroupPiece): { keys: string[]; values: unknown };
}
