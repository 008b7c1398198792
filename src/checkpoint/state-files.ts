import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Packr, unpackMultiple } from 'msgpackr';
import { ErrorCode, MillraceError } from '../errors.js';
import { verifyChecksum } from './files.js';

/**
 * State files: `state/<operatorId>/<partition>/<version>.changelog | .snapshot`. Version `v` is
 * the state at the end of epoch `v − 1` (Spark's numbering: batch N commits state version N + 1).
 * A changelog holds the keys written (with their values) and removed in that epoch; a snapshot
 * every key. The payload is a sequence of msgpack values (then the checksum trailer):
 *
 * ```
 * { format: 2, kind, version, operatorId, partition }   header
 * ['W', [key, ...], values]                              entries, in chunks (format 2)
 * ['w', [[key, value], ...]]                             entries, in chunks (format 1)
 * ['r', [key, ...]]                                      removed keys (changelogs)
 * ['end', entries, removed]                              totals: a file that lost a chunk fails
 * ```
 *
 * Format 2 writes a chunk's keys as one array and its values as the operator's codec packs them
 * together (`StateCodec.chunkEncoder`: the aggregation writes one array per field), instead of one
 * `[key, value]` pair per entry: a restore then decodes a few large arrays rather than several
 * small ones per key, which is most of its time (see docs/benchmarks.md, C1). Format 1 files are
 * still read. Within a file, keys written and keys removed are disjoint (a changelog) or nothing is
 * removed (a snapshot), and a key written twice (a snapshot's copy on touch) has the same value
 * both times, so the order of the pieces does not matter.
 */
export type StateFileKind = 'changelog' | 'snapshot';

/** The format written; {@link readStateFile} reads this and every older one. */
export const STATE_FILE_FORMAT = 2 as const;

export interface StateFileHeader {
  readonly format: 1 | 2;
  readonly kind: StateFileKind;
  readonly version: number;
  readonly operatorId: number;
  readonly partition: number;
}

/** Entries per chunk: what one encoding step handles. */
export const STATE_CHUNK_ENTRIES = 2048;

const packr = new Packr({ useRecords: false });

/** Packs one piece of a state file (a copy: the packer's buffer is reused). */
export function packStatePiece(value: unknown): Buffer {
  return Buffer.from(packr.pack(value));
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

/** What one state file holds. */
export interface StateFileContent {
  readonly header: StateFileHeader;
  /** The chunks of entries written, in file order. */
  readonly chunks: StateChunk[];
  readonly removed: string[];
  /** Entries written, over all chunks. */
  readonly entries: number;
}

function corrupt(path: string, why: string): MillraceError {
  return new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
}

/** Reads and checks one state file (synchronously: a task restores before it runs). */
export function readStateFile(path: string, expect: Omit<StateFileHeader, 'format'>): StateFileContent {
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
  if (header!.format !== 1 && header!.format !== 2) {
    throw corrupt(path, `its format ${JSON.stringify(header!.format)} is not one this version reads (1–2)`);
  }
  const chunks: StateChunk[] = [];
  const removed: string[] = [];
  let entries = 0;
  let end: unknown[] | undefined;
  for (let i = 1; i < items.length; i++) {
    const item = items[i] as [string, unknown, unknown];
    if (item[0] === 'W') {
      const keys = item[1] as string[];
      chunks.push({ keys, values: item[2], perEntry: false });
      entries += keys.length;
    } else if (item[0] === 'w') {
      const pairs = item[1] as [string, unknown][];
      const keys = new Array<string>(pairs.length);
      const values = new Array<unknown>(pairs.length);
      for (let j = 0; j < pairs.length; j++) {
        keys[j] = pairs[j]![0];
        values[j] = pairs[j]![1];
      }
      chunks.push({ keys, values, perEntry: true });
      entries += keys.length;
    } else if (item[0] === 'r') for (const k of item[1] as string[]) removed.push(k);
    else if (item[0] === 'end') end = item;
    else throw corrupt(path, `unknown piece '${String(item[0])}'`);
  }
  if (end === undefined || end[1] !== entries || end[2] !== removed.length) {
    throw corrupt(path, `it holds ${entries} entries and ${removed.length} removals, not what its end says`);
  }
  return { header: header!, chunks, removed, entries };
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
