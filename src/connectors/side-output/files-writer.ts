import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDirectory } from '../../checkpoint/files.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import { type DirectoryRole, ensureWritableDirectory } from '../../util/writable-directory.js';
import type { SideOutputWriter } from './writer.js';

/**
 * A side output in a directory: each run appends its records, one JSON line each, to a file of its
 * own, `<prefix>-<wall-clock time it was created>-<run id>.jsonl`, created at the run's first
 * record — file names sort in the order runs wrote them. Lines are appended as records come
 * (visible to readers at once), and `flush` makes them durable (`fsync`). A crash can cut the last
 * line of a file short: a line without its newline was never flushed, and readers should skip it.
 */
export class FilesSideOutputWriter<T> implements SideOutputWriter<T> {
  private file: Promise<FileHandle> | null = null;
  private path = '';
  private pending: string[] = [];
  private appending: Promise<void> = Promise.resolve();
  private scheduled = false;
  /** Lines were appended since the last fsync. */
  private dirty = false;
  private failure: MillraceError | null = null;
  private reportFailure: (error: MillraceError) => void = () => {};

  constructor(
    /** The option, for messages: `deadLetters`, `lateRows`. */
    private readonly option: string,
    /** How messages about the directory name it. */
    private readonly role: DirectoryRole,
    private readonly dir: string,
    private readonly prefix: string,
    private readonly runId: string,
    private readonly encode: (item: T) => string,
  ) {}

  /** Checks at start that the directory exists, or can be made, and can be written. */
  open(): Promise<void> {
    return ensureWritableDirectory(this.dir, this.role);
  }

  onFailure(report: (error: MillraceError) => void): void {
    this.reportFailure = report;
  }

  write(item: T): void {
    if (this.failure !== null) return;
    this.pending.push(this.encode(item));
    if (this.scheduled) return;
    this.scheduled = true;
    this.appending = this.appending.then(() => this.append());
  }

  async flush(): Promise<void> {
    await this.appending;
    if (this.failure !== null) throw this.failure;
    if (!this.dirty || this.file === null) return;
    this.dirty = false;
    try {
      await (await this.file).sync();
    } catch (e) {
      throw this.fail(e);
    }
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      const file = this.file;
      this.file = null;
      await (await file?.catch(() => null))?.close().catch(() => {});
    }
  }

  /** Appends every pending line, then those that came meanwhile. */
  private async append(): Promise<void> {
    this.scheduled = false;
    while (this.pending.length > 0 && this.failure === null) {
      const text = this.pending.join('');
      this.pending = [];
      try {
        this.file ??= this.create();
        await (await this.file).appendFile(text);
        this.dirty = true;
      } catch (e) {
        this.fail(e);
      }
    }
  }

  private async create(): Promise<FileHandle> {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    this.path = join(this.dir, `${this.prefix}-${stamp}-${this.runId}.jsonl`);
    const file = await open(this.path, 'a');
    // The file's name is durable before any line in it is said to be.
    await syncDirectory(this.dir);
    return file;
  }

  private fail(cause: unknown): MillraceError {
    if (this.failure === null) {
      this.pending = [];
      this.failure = new MillraceError(
        ErrorCode.SIDE_OUTPUT_WRITE_FAILED,
        `${this.option}: cannot write to ${this.path || this.dir}: ${(cause as Error)?.message ?? String(cause)}`,
        { cause },
      );
      this.reportFailure(this.failure);
    }
    return this.failure;
  }
}
