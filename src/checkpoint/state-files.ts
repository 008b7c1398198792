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
 * { format: 1, kind, version, operatorId, partition }   header
 * ['w', [[key, value], ...]]                             entries, in chunks
 * ['r', [key, ...]]                                      removed keys (changelogs)
 * ['end', entries, removed]                              totals: a file that lost a chunk fails
 * ```
 */
export type StateFileKind = 'changelog' | 'snapshot';

export interface StateFileHeader {
  readonly format: 1;
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

/** What one state file holds. */
export interface StateFileContent {
  readonly header: StateFileHeader;
  readonly written: [string, unknown][];
  readonly removed: string[];
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
  const written: [string, unknown][] = [];
  const removed: string[] = [];
  let end: unknown[] | undefined;
  for (let i = 1; i < items.length; i++) {
    const item = items[i] as [string, unknown, unknown];
    if (item[0] === 'w') for (const e of item[1] as [string, unknown][]) written.push(e);
    else if (item[0] === 'r') for (const k of item[1] as string[]) removed.push(k);
    else if (item[0] === 'end') end = item;
    else throw corrupt(path, `unknown piece '${String(item[0])}'`);
  }
  if (end === undefined || end[1] !== written.length || end[2] !== removed.length) {
    throw corrupt(
      path,
      `it holds ${written.length} entries and ${removed.length} removals, not what its end says`,
    );
  }
  return { header: header!, written, removed };
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
