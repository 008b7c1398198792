import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Packr, unpack, unpackMultiple } from 'msgpackr';
import { ErrorCode, MillraceError } from '../errors.js';
import type { KeyGroupPiece } from '../state/key-groups.js';
import { compositeKey, type TableRows, tableRows } from '../state/table-staging.js';
import { verifyChecksum } from './files.js';

/**
 * State files: `state/<operatorId>/<partition>/<version>.changelog | .snapshot`. Version `v` is
 * the state at the end of epoch `v − 1` (Spark's numbering: batch N commits state version N + 1).
 * A changelog holds the keys written (with their values) and removed in that epoch; a snapshot
 * every key. The payload is a sequence of msgpack values (then the checksum trailer):
 *
 * ```
 * { format: 3, kind, version, operatorId, partition, keyGroups }   header
 * ['K', group, count, bytes]      entries of one key group: bytes = msgpack [[key, ...], values]
 * ['R', group, count, bytes]      keys of one key group removed (changelogs): bytes = msgpack [key, ...]
 * ['T', group, count, bytes]      a group table's entries of one key group (format 4)
 * ['X', 0, 1, bytes]              a group table's windows evicted: bytes = msgpack watermark (format 4)
 * ['end', entries, removed, size, keyChars]   totals, and the keys the state holds at this version
 * ```
 *
 * Format 4 adds the pieces of a group table (an aggregation by one column, see
 * src/state/group-table.ts), which keeps no key strings: a `T` piece holds
 * `[keyColumn, windows, stateColumns]`, `windows` being runs `[start, end, count, ...]` over the
 * entries in order; its key group is that of the entry's composite key (`s<start>|<key>`), as an
 * InMemoryStateStore of groups would write it. An `X` piece says every window ending at or before
 * the watermark is gone (the groups of earlier files): one number instead of a removal per group.
 * A restore applies a file's `X` before its entries.
 *
 * Format 3 groups entries by key group (`src/state/key-groups.ts`) and keeps each group's piece
 * as bytes inside the file, so reading a file decodes only its outline: a restore decodes and
 * applies one key group at a time, from every file of its chain, and can leave groups for later.
 * Within a piece a chunk's keys are one array and its values are what the operator's codec packs
 * for the whole chunk (`StateCodec.chunkEncoder`: the aggregation writes one array per field):
 * a few large arrays to decode rather than several small ones per key.
 *
 * Older formats are still read (and restored all at once): format 2 has `['W', [key, ...], values]`
 * chunks and `['r', [key, ...]]` removals, format 1 `['w', [[key, value], ...]]` chunks; both end
 * with `['end', entries, removed]`.
 *
 * Within a file, keys written and keys removed are disjoint (a changelog) or nothing is removed (a
 * snapshot), and a key written twice (a snapshot's copy on touch) has the same value both times,
 * so the order of the pieces does not matter.
 */
export type StateFileKind = 'changelog' | 'snapshot';

/** The format written; {@link readStateFile} reads this and every older one. */
export const STATE_FILE_FORMAT = 4 as const;

export interface StateFileHeader {
  readonly format: 1 | 2 | 3 | 4;
  readonly kind: StateFileKind;
  readonly version: number;
  readonly operatorId: number;
  readonly partition: number;
  /** Formats 3 and 4: the key groups the pieces are hashed into. */
  readonly keyGroups?: number;
}

/** Entries per chunk: what one encoding step handles. */
export const STATE_CHUNK_ENTRIES = 2048;

const packr = new Packr({ useRecords: false });

/** Packs one piece of a state file (a copy: the packer's buffer is reused). */
export function packStatePiece(value: unknown): Buffer {
  return Buffer.from(packr.pack(value));
}

/**
 * Packs the entries of one key group (format 3): their keys, and their values as one chunk. Two
 * buffers to write one after the other: the piece's head, then its bytes (not copied again).
 */
export function packEntriesPiece(group: number, keys: readonly string[], values: unknown): [Buffer, Buffer] {
  const bytes = Buffer.from(packr.pack([keys, values]));
  return [pieceHead('K', group, keys.length, bytes.length), bytes];
}

/** Packs keys of one key group removed (format 3), as {@link packEntriesPiece} does. */
export function packRemovalsPiece(group: number, keys: readonly string[]): [Buffer, Buffer] {
  const bytes = Buffer.from(packr.pack(keys));
  return [pieceHead('R', group, keys.length, bytes.length), bytes];
}

/**
 * A group table's entries of one key group (format 4), already msgpack (the table's checkpoint
 * writes them as it walks, see MsgpackWriter): the piece's head, then its bytes.
 */
export function packTablePiece(group: number, count: number, bytes: Uint8Array): [Buffer, Uint8Array] {
  return [pieceHead('T', group, count, bytes.length), bytes];
}

/** Packs a group table's eviction: every window ending at or before `watermark` is gone (format 4). */
export function packEvictionPiece(watermark: number): [Buffer, Buffer] {
  const bytes = Buffer.from(packr.pack(watermark));
  return [pieceHead('X', 0, 1, bytes.length), bytes];
}

/**
 * The msgpack of `[tag, group, count, <bin of byteLength>]` up to the binary's bytes: a fixarray
 * of 4, a one-letter fixstr, a uint16, a uint32, and a bin32 header.
 */
function pieceHead(tag: KeyGroupPiece['tag'], group: number, count: number, byteLength: number): Buffer {
  const head = Buffer.allocUnsafe(16);
  head[0] = 0x94;
  head[1] = 0xa1;
  head[2] = tag.charCodeAt(0);
  head[3] = 0xcd;
  head.writeUInt16BE(group, 4);
  head[6] = 0xce;
  head.writeUInt32BE(count, 7);
  head[11] = 0xc6;
  head.writeUInt32BE(byteLength, 12);
  return head;
}

export function stateFileName(version: number, kind: StateFileKind): string {
  return `${version}.${kind}`;
}

/**
 * Entries written, as one chunk: their keys, and their values as `perEntry` says — one encoded
 * value per key (`StateCodec.encode`, format 1), or what the codec packed for the whole chunk
 * (`StateCodec.chunkEncoder`, format 2; the array of encoded values for a codec without one).
 */
export interface StateChunk {
  readonly keys: string[];
  readonly values: unknown;
  readonly perEntry: boolean;
}

/** What one state file holds, decoded. */
export interface StateFileContent {
  readonly header: StateFileHeader;
  /** The chunks of entries written, in file order. */
  readonly chunks: StateChunk[];
  readonly removed: string[];
  /** Format 4, a group table: the watermark up to which it evicted windows (null: none). */
  readonly evictedUpTo: number | null;
  /** Entries written, over all chunks. */
  readonly entries: number;
}

/** A format-3 piece of one key group, not decoded. */
export interface StateFilePiece extends KeyGroupPiece {
  readonly group: number;
  /** The file it is in (named by a decoding error). */
  readonly path: string;
}

/**
 * One state file, checked, with its key groups' pieces left encoded (format 3), or its chunks
 * decoded (older formats, which have no key groups).
 */
export interface OpenedStateFile {
  readonly header: StateFileHeader;
  /** Formats 3 and 4: the pieces, in file order. Null for older formats. */
  readonly pieces: StateFilePiece[] | null;
  /** Older formats: the chunks written and the keys removed (empty for format 3). */
  readonly chunks: StateChunk[];
  readonly removed: string[];
  /** Entries written and keys removed, over the whole file. */
  readonly entries: number;
  readonly removals: number;
  /** Format 3: the keys the state holds at this version, and their characters. */
  readonly size: number | null;
  readonly keyChars: number | null;
}

function corrupt(path: string, why: string): MillraceError {
  return new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
}

/**
 * Reads and checks one state file (synchronously: a task restores before it runs): its checksum,
 * its header and its totals. Format-3 pieces stay encoded (see {@link decodeStatePiece}).
 */
export function openStateFile(path: string, expect: Omit<StateFileHeader, 'format'>): OpenedStateFile {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new MillraceError(
        ErrorCode.CHECKPOINT_CORRUPT,
        `checkpoint file ${path} is missing: the state of epoch ${expect.version - 1} cannot be restored without it`,
      );
    }
    throw e;
  }
  const payload = verifyChecksum(bytes, path);
  let items: unknown[];
  try {
    items = unpackMultiple(payload) as unknown[];
  } catch (e) {
    throw corrupt(path, `it cannot be decoded (${(e as Error).message})`);
  }
  const header = items[0] as StateFileHeader | undefined;
  for (const field of ['kind', 'version', 'operatorId', 'partition'] as const) {
    if (header?.[field] !== expect[field]) {
      throw corrupt(
        path,
        `its header says ${field} ${JSON.stringify(header?.[field])}, expected ${expect[field]}`,
      );
    }
  }
  const format = header!.format;
  if (format !== 1 && format !== 2 && format !== 3 && format !== 4) {
    throw corrupt(path, `its format ${JSON.stringify(format)} is not one this version reads (1–4)`);
  }
  const grouped = format >= 3;
  const groups = header!.keyGroups;
  if (grouped && (typeof groups !== 'number' || groups < 1 || (groups & (groups - 1)) !== 0)) {
    throw corrupt(path, `its header says keyGroups ${JSON.stringify(groups)}, expected a power of two`);
  }
  const pieces: StateFilePiece[] | null = grouped ? [] : null;
  const chunks: StateChunk[] = [];
  const removed: string[] = [];
  let entries = 0;
  let removals = 0;
  let end: unknown[] | undefined;
  for (let i = 1; i < items.length; i++) {
    const item = items[i] as [string, unknown, unknown, unknown];
    const tag = item[0];
    if (grouped && (tag === 'K' || tag === 'R' || (format === 4 && (tag === 'T' || tag === 'X')))) {
      const [, group, count, data] = item;
      if (
        typeof group !== 'number' ||
        !(group >= 0 && group < groups!) ||
        typeof count !== 'number' ||
        !(data instanceof Uint8Array)
      ) {
        throw corrupt(path, `a piece of key group ${JSON.stringify(group)} is malformed`);
      }
      pieces!.push({ tag, group, removal: tag === 'R', count, data, path });
      if (tag === 'K' || tag === 'T') entries += count;
      else removals += count;
    } else if (!grouped && tag === 'W') {
      const keys = item[1] as string[];
      chunks.push({ keys, values: item[2], perEntry: false });
      entries += keys.length;
    } else if (!grouped && tag === 'w') {
      const pairs = item[1] as [string, unknown][];
      const keys = new Array<string>(pairs.length);
      const values = new Array<unknown>(pairs.length);
      for (let j = 0; j < pairs.length; j++) {
        keys[j] = pairs[j]![0];
        values[j] = pairs[j]![1];
      }
      chunks.push({ keys, values, perEntry: true });
      entries += keys.length;
    } else if (!grouped && tag === 'r') {
      for (const k of item[1] as string[]) removed.push(k);
      removals += (item[1] as string[]).length;
    } else if (tag === 'end') end = item;
    else throw corrupt(path, `unknown piece '${String(tag)}'`);
  }
  if (end === undefined || end[1] !== entries || end[2] !== removals) {
    throw corrupt(path, `it holds ${entries} entries and ${removals} removals, not what its end says`);
  }
  const size = grouped ? end[3] : null;
  const keyChars = grouped ? end[4] : null;
  if (grouped && (typeof size !== 'number' || typeof keyChars !== 'number')) {
    throw corrupt(path, 'its end does not say how many keys the state holds');
  }
  return {
    header: header!,
    pieces,
    chunks,
    removed,
    entries,
    removals,
    size: size as number | null,
    keyChars: keyChars as number | null,
  };
}

/**
 * Decodes a piece: its keys, and its entries' values as one chunk (none for removals); a group
 * table's pieces (`T`, `X`) have no keys and are all values.
 */
export function decodeStatePiece(path: string, piece: KeyGroupPiece): { keys: string[]; values: unknown } {
  let decoded: unknown;
  try {
    decoded = unpack(piece.data);
  } catch (e) {
    throw corrupt(path, `a piece cannot be decoded (${(e as Error).message})`);
  }
  if (piece.tag === 'T' || piece.tag === 'X') return { keys: [], values: decoded };
  const keys = (piece.removal ? decoded : (decoded as unknown[])?.[0]) as string[];
  if (!Array.isArray(keys) || keys.length !== piece.count) {
    throw corrupt(path, `a piece holds other than the ${piece.count} keys it says`);
  }
  return { keys, values: piece.removal ? undefined : (decoded as unknown[])[1] };
}

/** Reads, checks and decodes one state file whole (the CLI's inspect and verify read files so). */
export function readStateFile(path: string, expect: Omit<StateFileHeader, 'format'>): StateFileContent {
  const file = openStateFile(path, expect);
  if (file.pieces === null) {
    const { header, chunks, removed, entries } = file;
    return { header, chunks, removed, entries, evictedUpTo: null };
  }
  const chunks: StateChunk[] = [];
  const removed: string[] = [];
  let evictedUpTo: number | null = null;
  for (const piece of file.pieces) {
    const { keys, values } = decodeStatePiece(path, piece);
    if (piece.tag === 'X') {
      if (typeof values !== 'number') throw corrupt(path, 'an eviction piece holds no watermark');
      evictedUpTo = Math.max(evictedUpTo ?? values, values);
    } else if (piece.tag === 'T') {
      // As an InMemoryStateStore of groups would hold them: composite keys, groupCodec's chunk.
      let rows: TableRows;
      try {
        rows = tableRows(values, piece.count);
      } catch (e) {
        throw corrupt(path, (e as Error).message);
      }
      const chunkKeys = rows.keyColumn.map((v, i) => compositeKey(rows.starts[i]!, v));
      chunks.push({
        keys: chunkKeys,
        values: [[rows.keyColumn], rows.starts, rows.ends, rows.stateColumns],
        perEntry: false,
      });
    } else if (piece.removal) for (const k of keys) removed.push(k);
    else chunks.push({ keys, values, perEntry: false });
  }
  return { header: file.header, chunks, removed, entries: file.entries, evictedUpTo };
}

/**
 * The keys a chain of state files holds, replayed as a restore does: file by file, a group table's
 * eviction and the removals, then the entries (the CLI's inspect, the checkpoint benchmark).
 */
export class StateKeyReplay {
  /** Each key with its window's end when the file says (an aggregation's groups). */
  private readonly keys = new Map<string, number | undefined>();

  apply(content: StateFileContent): void {
    const evicted = content.evictedUpTo;
    if (evicted !== null) {
      for (const [k, end] of this.keys) if (end !== undefined && end <= evicted) this.keys.delete(k);
    }
    for (const k of content.removed) this.keys.delete(k);
    for (const chunk of content.chunks) {
      const ends = windowEnds(chunk.values, chunk.keys.length);
      for (let i = 0; i < chunk.keys.length; i++) this.keys.set(chunk.keys[i]!, ends?.[i]);
    }
  }

  get size(): number {
    return this.keys.size;
  }
}

/** The window ends of an aggregation's chunk (groupCodec's columns), or undefined for other values. */
function windowEnds(values: unknown, count: number): number[] | undefined {
  const ends = Array.isArray(values) && values.length === 4 ? values[2] : undefined;
  return Array.isArray(ends) && ends.length === count ? (ends as number[]) : undefined;
}

/** The versions of each kind present in a partition's state directory. */
export function listStateVersions(dir: string): { snapshots: number[]; changelogs: number[] } {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { snapshots: [], changelogs: [] };
    throw e;
  }
  const snapshots: number[] = [];
  const changelogs: number[] = [];
  for (const name of names) {
    const m = /^(\d+)\.(changelog|snapshot)$/.exec(name);
    if (m === null) continue;
    (m[2] === 'snapshot' ? snapshots : changelogs).push(Number(m[1]));
  }
  snapshots.sort((a, b) => a - b);
  changelogs.sort((a, b) => a - b);
  return { snapshots, changelogs };
}

/**
 * The files that rebuild `version` of a partition's state: the newest snapshot at or below it, then
 * every changelog after it, in order. Throws CHECKPOINT_CORRUPT naming the first missing file.
 */
export function restorePlan(
  dir: string,
  version: number,
): { path: string; version: number; kind: StateFileKind }[] {
  const { snapshots } = listStateVersions(dir);
  const base = snapshots.filter((v) => v <= version).at(-1) ?? 0;
  const files: { path: string; version: number; kind: StateFileKind }[] = [];
  if (base > 0)
    files.push({ path: join(dir, stateFileName(base, 'snapshot')), version: base, kind: 'snapshot' });
  for (let v = base + 1; v <= version; v++) {
    files.push({ path: join(dir, stateFileName(v, 'changelog')), version: v, kind: 'changelog' });
  }
  return files;
}
