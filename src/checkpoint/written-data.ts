import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Damage } from './damage.js';
import type { CheckpointLayout } from './layout.js';

/**
 * The directories where a run writes what it did — logs, state, the sources' own files — once it
 * has written the metadata. A lock (or whatever else lies at the top) is not among them: a
 * directory holding only a stale lock is a fresh checkpoint.
 */
const DATA_DIRS = ['offsets', 'commits', 'state', 'sources'] as const;

/** The first file under `dir`, depth first in name order, relative to `dir` (null: none). */
async function firstFile(dir: string): Promise<string | null> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw e;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (!e.isDirectory()) return e.name;
    const inner = await firstFile(join(dir, e.name));
    if (inner !== null) return `${e.name}/${inner}`;
  }
  return null;
}

/**
 * What a query wrote into the checkpoint at `root`: one file of each data directory that holds
 * any (`offsets/4`, `state/2/0/5.changelog`, …), none for a fresh checkpoint. Empty directories do
 * not count: a run creates them before it writes anything.
 */
export async function writtenData(root: string): Promise<string[]> {
  const found: string[] = [];
  for (const dir of DATA_DIRS) {
    const file = await firstFile(join(root, dir));
    if (file !== null) found.push(`${dir}/${file}`);
  }
  return found;
}

/**
 * The damage of a checkpoint that holds `found` (what {@link writtenData} lists) and no metadata:
 * its query id, plan and state schema are gone, so a run must not start over on top of it.
 */
export function metadataMissing(layout: CheckpointLayout, found: readonly string[]): Damage {
  return {
    path: layout.metadata,
    noun: 'checkpoint file',
    clause:
      `is missing, and the checkpoint holds what a query wrote (${found.join(', ')}): without the ` +
      'metadata a run would start over with a new query id and read that state and those offsets ' +
      'into whatever plan it has, unchecked. Put the metadata back from a copy of the checkpoint, or ' +
      'give the query a new checkpointLocation',
  };
}
