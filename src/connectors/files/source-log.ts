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
   * Every file taken so far, in order. An entry missing before the last one is damage
   * (`CHECKPOINT_CORRUPT` naming it): offsets count rows over every entry, so none can be skipped.
   */
  async read(): Promise<LoggedFile[]> {
    const seqs = await numberedEntries(this.dir);
    const gap = seqs.findIndex((seq, i) => seq !== i);
    if (gap >= 0) {
      throw new MillraceError(
        ErrorCode.CHECKPOINT_CORRUPT,
        `checkpoint file ${join(this.dir, String(gap))} is missing: the files source's log lists the files it took in ` +
          `entries 0 to ${seqs.at(-1)}, and offsets count the rows of every one`,
      );
    }
    const files: LoggedFile[] = [];
    for (const seq of seqs) {
      const path = join(this.dir, String(seq));
      const lines = (await readChecked(path))
        .toString()
        .split('\n')
        .filter((l) => l !== '');
      try {
        if (lines[0] !== 'v1') throw new Error(`unknown format '${lines[0]}'`);
        for (const l of lines.slice(1)) {
          const f = JSON.parse(l) as LoggedFile;
          if (typeof f.name !== 'string' || !Number.isInteger(f.rows) || typeof f.format !== 'string') {
            throw new Error(`bad entry ${l}`);
          }
          files.push(f);
        }
      } catch (e) {
        throw new MillraceError(
          ErrorCode.CHECKPOINT_CORRUPT,
          `checkpoint file ${path} is corrupt: ${(e as Error).message}`,
        );
      }
    }
    this.next = (seqs.at(-1) ?? -1) + 1;
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
