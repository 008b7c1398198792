import { join } from 'node:path';
import { type Damage, damageOf } from '../../checkpoint/damage.js';
import { numberedEntries } from '../../checkpoint/files.js';
import type { SourceFilesCheck } from '../contract.js';
import { FILES_LOG_DIR, logGap, readLogEntry } from './source-log.js';

/**
 * What a restart needs of a files source's checkpoint directory: its whole log (`files/0` …
 * `files/<n>`, numbered without gaps, never removed), whose entries hold at least the rows the
 * offsets say were read. The log is written before any row of its files is sent, so a shortfall is
 * a lost last entry.
 */
export const checkFilesLog: SourceFilesCheck = async (sourceDir, label, listed) => {
  const dir = join(sourceDir, FILES_LOG_DIR);
  const seqs = await numberedEntries(dir);
  let rows = 0;
  for (const [i, seq] of seqs.entries()) {
    const path = join(dir, String(i));
    try {
      if (seq !== i) throw logGap(dir, i, seq);
      for (const f of await readLogEntry(path)) rows += f.rows;
    } catch (e) {
      return { damage: [damageOf(e, path)], files: i };
    }
  }
  // A files source has one partition.
  let furthest: (typeof listed)[number] | undefined;
  for (const l of listed) if ((l.offsets[0] ?? 0) > (furthest?.offsets[0] ?? 0)) furthest = l;
  const read = furthest?.offsets[0] ?? 0;
  if (furthest === undefined || read <= rows) return { damage: [], files: seqs.length };
  const clause =
    `is missing: offsets/${furthest.epoch} says ${label} read ${read} rows, and the ` +
    `${seqs.length} entries of its log before this one list files of only ${rows} rows (the log is ` +
    'written before any row of its files is sent)';
  const damage: Damage = { path: join(dir, String(seqs.length)), noun: 'checkpoint file', clause };
  return { damage: [damage], files: seqs.length };
};
