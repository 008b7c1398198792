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

/**
 * A restore by key group in progress (InMemoryStateStore, GroupTable): which groups are not loaded
 * yet, and the keys they hold at the restored version. A store loads a group when one of its keys
 * is needed ({@link take}), and the others a few at a time ({@link loadSome}).
 */
export class KeyGroupLoad {
  private readonly pending: boolean[];
  private next = 0;
  /** Groups not loaded yet. */
  left: number;
  /** Keys (and their characters) of the groups not loaded yet; the store takes off what it loads. */
  unloadedSize: number;
  unloadedChars: number;

  /** Starts restoring `source` into a store; `empty`: the store holds nothing (it must). */
  constructor(
    readonly source: KeyGroupSource,
    empty: boolean,
  ) {
    if (source.groups !== KEY_GROUPS || !empty) {
      throw new Error(
        `internal: a restore by key group needs an empty store and files of ${KEY_GROUPS} key groups`,
      );
    }
    this.pending = source.pieces.map(() => true);
    this.left = source.groups;
    this.unloadedSize = source.size;
    this.unloadedChars = source.keyChars;
  }

  isPending(group: number): boolean {
    return this.pending[group] === true;
  }

  /** Marks `group` loaded and hands over its pieces, oldest file first. */
  take(group: number): KeyGroupPiece[] {
    this.pending[group] = false;
    this.left--;
    const pieces = this.source.pieces[group]!;
    this.source.pieces[group] = [];
    return pieces;
  }

  /** Has `load` load up to `groups` of the groups left, in order; true once none is left. */
  loadSome(groups: number, load: (group: number) => void): boolean {
    for (let n = 0; n < groups && this.left > 0; n++) {
      while (!this.pending[this.next]) this.next++;
      load(this.next);
    }
    return this.left === 0;
  }
}

/**
 * What the stores restored by key group (InMemoryStateStore, GroupTable) do alike: they hold the
 * restore in progress, report on it, and load its groups — one when a row needs a key of it
 * ({@link loadGroup}), the others a few at a time ({@link loadSome}). Each store says how a group's
 * pieces become its entries ({@link loadPieces}).
 */
export abstract class RestoredByKeyGroup {
  /** A restore with key groups still to load, or null. */
  protected loading: KeyGroupLoad | null = null;

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
    const l = this.loading;
    return l === null || l.loadSome(groups, (group) => this.loadGroup(l, group));
  }

  /** Starts restoring `source` into the store (`empty`: it holds nothing); not `lazy`: all of it now. */
  protected beginRestore(source: KeyGroupSource, empty: boolean, lazy: boolean): void {
    this.loading = new KeyGroupLoad(source, empty);
    if (!lazy) this.loadAll();
  }

  /** Loads key group `group` of the restore `l` now. */
  protected loadGroup(l: KeyGroupLoad, group: number): void {
    const pieces = l.take(group);
    if (l.left === 0) this.loading = null;
    this.loadPieces(l, group, pieces);
  }

  /** Builds a key group's entries from its pieces, oldest file first. */
  protected abstract loadPieces(l: KeyGroupLoad, group: number, pieces: readonly KeyGroupPiece[]): void;
}
