import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { numberedEntries, readChecked, writeFileAtomic } from '../../checkpoint/files.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { FileFormat } from './formats.js';

/** A file the source took, and how many rows it holds. */
export interface LoggedFile {
  readonly name: string;
  readonly rows: number;
  /** The source's format, or the manifest's for a files sink's output. */
  readonly format: FileFormat;
}

/** The files source's log, under its checkpoint directory (`sources/<id>/files/`). */
export const FILES_LOG_DIR = 'files';

/**
 * The files source's record in the checkpoint (`sources/<id>/files/<n>`): the files it took, in
 * the order it took them, one entry per discovery. Offsets count rows over this order, so a restart
 * reads the same rows at the same offsets. Written before the rows of the files are sent, so no
 * committed offset ever points past it.
 *
 * ```
 * v1
 * {"name":"payments-0001.jsonl","rows":5000,"format":"json"}
 * ```
 */
export class FilesSourceLog {
  private next = 0;

  constructor(private readonly dir: string) {}

  /** Entries in the log (the next one written is numbered so). */
  get entries(): number {
    return this.next;
  }

  /**
   * Every file taken so far, in order. Entries are numbered from 0 and never removed, so a gap is an
   * entry lost (CHECKPOINT_CORRUPT naming it): offsets count rows over all of them.
   */
  async read(): Promise<LoggedFile[]> {
    const seqs = await numberedEntries(this.dir);
    const gap = seqs.findIndex((seq, i) => seq !== i);
    if (gap >= 0) throw logGap(this.dir, gap, seqs[gap]!);
    const files: LoggedFile[] = [];
    for (const seq of seqs) for (const f of await readLogEntry(join(this.dir, String(seq)))) files.push(f);
    this.next = seqs.length;
    return files;
  }

  /** Records newly taken files, durably. */
  async append(files: readonly LoggedFile[]): Promise<void> {
    if (files.length === 0) return;
    await mkdir(this.dir, { recursive: true });
    const text = [
      'v1',
      ...files.map((f) => JSON.stringify({ name: f.name, rows: f.rows, format: f.format })),
    ].join('\n');
    await writeFileAtomic(join(this.dir, String(this.next)), Buffer.from(`${text}\n`));
    this.next++;
  }
}

/** The error of a log whose entry `missing` is gone while entry `following` is there. */
export function logGap(dir: string, missing: number, following: number): MillraceError {
  return new MillraceError(
    ErrorCode.CHECKPOINT_CORRUPT,
    `checkpoint file ${join(dir, String(missing))} is missing: the source's log numbers its entries ` +
      `from 0 without gaps, and entry ${following} follows it; offsets count rows over every entry, in order`,
  );
}

/** The files of one entry of the log, checked: CHECKPOINT_CORRUPT naming it when it is damaged. */
export async function readLogEntry(path: string): Promise<LoggedFile[]> {
  const lines = (await readChecked(path))
    .toString()
    .split('\n')
    .filter((l) => l !== '');
  const files: LoggedFile[] = [];
  const corrupt = (why: string) =>
    new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
  try {
    if (lines[0] !== 'v1') throw corrupt(`unknown format '${lines[0]}'`);
    for (const l of lines.slice(1)) {
      const f = JSON.parse(l) as LoggedFile;
      if (typeof f.name !== 'string' || !Number.isInteger(f.rows) || typeof f.format !== 'string') {
        throw corrupt(`bad entry ${l}`);
      }
      files.push(f);
    }
  } catch (e) {
    throw e instanceof MillraceError ? e : corrupt((e as Error).message);
  }
  return files;
}
