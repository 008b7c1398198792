import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { FrameWriter } from '../../runtime/channel/frame-codec.js';
import type { PreciseTime } from '../../runtime/time/precise-time.js';
import type { FilesSourceSpec } from '../spec.js';
import { decodeRows, type FileFormat } from './formats.js';
import { MANIFEST_DIR, manifestEpochs, readManifest } from './manifest.js';
import { FilesSourceLog, type LoggedFile } from './source-log.js';

/** Rows read from files and not sent yet, from offset `start` on. */
interface Chunk {
  readonly start: number;
  readonly rows: unknown[];
  readonly file: string;
  readonly readAt: number;
}

/**
 * The driver's end of a files source (one partition): it lists the directory, reads new files
 * whole, records them in the checkpoint, and sends their rows through the source task's feed ring —
 * at once in real-time mode, when a batch takes them in micro-batch mode. Offsets count rows over
 * the files in the order they were taken.
 */
export class FilesSourceFeed {
  /** Called after new rows were found (micro-batch triggers react to new data). */
  onData: (() => void) | undefined;
  private readonly files: LoggedFile[] = [];
  private readonly known = new Set<string>();
  private total = 0;
  private fed = 0;
  private pending: Chunk[] = [];
  private log: FilesSourceLog | null = null;
  /** Discoveries run one after another; a refresh waits for the ones before it. */
  private chain: Promise<boolean> = Promise.resolve(false);
  private manifestsUpTo = -1;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /**
   * Real-time mode, once the run has placed the epoch it redoes: rows found from then on are sent
   * at once. Before, they wait, so that a redone epoch holds exactly the rows it held before.
   */
  private live = false;

  constructor(
    readonly spec: FilesSourceSpec,
    private readonly writer: FrameWriter,
    private readonly precise: PreciseTime,
    private readonly microBatch: boolean,
  ) {}

  /**
   * Reads the files the checkpoint says were taken (`logDir`; null without a checkpoint), and the
   * rows of those not wholly before the resume offset. A listed file that is gone or changed
   * fails with `SOURCE_DATA_LOST`: its rows cannot be read again.
   */
  async open(logDir: string | null): Promise<void> {
    if (logDir !== null) {
      this.log = new FilesSourceLog(logDir);
      for (const f of await this.log.read()) this.take(f);
    }
    if (this.fed > this.total) {
      throw new MillraceError(
        ErrorCode.CHECKPOINT_CORRUPT,
        `${this.spec.description}: the checkpoint's offset ${this.fed} is past the ${this.total} rows of the files it lists`,
      );
    }
    for (const [i, f] of this.files.entries()) {
      const start = this.startOf(i);
      if (start + f.rows <= this.fed || f.rows === 0) continue;
      const rows = await this.read(f.name, f.format);
      if (rows.length !== f.rows) {
        throw new MillraceError(
          ErrorCode.SOURCE_DATA_LOST,
          `${this.spec.description}: ${f.name} held ${f.rows} rows when it was taken and holds ${rows.length} now; files must not change once they are in the directory`,
        );
      }
      this.pending.push({ start, rows, file: f.name, readAt: this.precise.now() });
    }
  }

  /** A resumed run: rows before the committed offset are not sent again. */
  resumeAt(offsets: readonly number[]): void {
    this.fed = Math.max(this.fed, offsets[0] ?? 0);
  }

  /** Looks for new files now (after any look already under way); true when rows were found. */
  refresh(): Promise<boolean> {
    const run = this.chain.then(() => this.discover());
    this.chain = run.catch(() => false);
    return run;
  }

  /** Lists the directory every `pollIntervalMs` until {@link close}; `failed` gets a read error. */
  startPolling(failed: (e: unknown) => void): void {
    const poll = () => {
      this.timer = undefined;
      this.refresh().then(
        () => {
          if (!this.closed) this.timer = setTimeout(poll, this.spec.pollIntervalMs).unref();
        },
        (e) => {
          if (!this.closed) failed(e);
        },
      );
    };
    this.timer = setTimeout(poll, this.spec.pollIntervalMs).unref();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  /** Sends rows `[fed, upTo)` to the source task. */
  feed(_partition: number, upTo: number): void {
    const end = Math.min(upTo, this.total);
    while (this.fed < end) {
      const chunk = this.pending[0]!;
      const last = Math.min(chunk.rows.length, end - chunk.start);
      for (let i = this.fed - chunk.start; i < last; i++) {
        try {
          this.writer.writeData(chunk.rows[i], 0, chunk.readAt, 0, chunk.start + i);
        } catch (cause) {
          this.writer.publish();
          const code = cause instanceof MillraceError ? cause.code : ErrorCode.RECORD_NOT_ENCODABLE;
          throw new MillraceError(
            code,
            `${this.spec.description}: row ${i} of ${chunk.file} cannot be sent: ${(cause as Error).message}`,
            { cause },
          );
        }
      }
      this.fed = chunk.start + last;
      if (last === chunk.rows.length) this.pending.shift();
    }
    this.writer.publish();
  }

  /** Real-time mode: sends every row read and not sent yet, and from now on rows as they are found. */
  feedAll(): void {
    if (this.closed) return;
    this.live = !this.microBatch;
    this.feed(0, this.total);
  }

  latestOffsets(): number[] {
    return [this.total];
  }

  private take(file: LoggedFile): void {
    this.files.push(file);
    this.known.add(file.name);
    this.total += file.rows;
  }

  private startOf(index: number): number {
    let start = 0;
    for (let i = 0; i < index; i++) start += this.files[i]!.rows;
    return start;
  }

  private async discover(): Promise<boolean> {
    if (this.closed) return false;
    const found = await this.newFiles();
    if (found.length === 0 || this.closed) return false;
    const read: { file: LoggedFile; rows: unknown[] }[] = [];
    for (const f of found) {
      const rows = await this.read(f.name, f.format);
      read.push({ file: { name: f.name, format: f.format, rows: rows.length }, rows });
    }
    // Recorded before a row is sent: no committed offset can point past the checkpoint's list.
    await this.log?.append(read.map((f) => f.file));
    if (this.closed) return false;
    const readAt = this.precise.now();
    let rows = 0;
    for (const f of read) {
      const start = this.total;
      this.take(f.file);
      rows += f.rows.length;
      if (f.rows.length > 0) this.pending.push({ start, rows: f.rows, file: f.file.name, readAt });
    }
    if (rows === 0) return false;
    if (this.live) this.feedAll();
    this.onData?.();
    return true;
  }

  /** Files not taken yet, in the order to take them. */
  private async newFiles(): Promise<{ name: string; format: FileFormat }[]> {
    const dir = this.spec.path;
    if (await isDirectory(join(dir, MANIFEST_DIR))) {
      const out: { name: string; format: FileFormat }[] = [];
      for (const epoch of await manifestEpochs(dir)) {
        if (epoch <= this.manifestsUpTo) continue;
        const m = await readManifest(dir, epoch);
        if (m === undefined) break;
        for (const f of m.files) if (!this.known.has(f.name)) out.push({ name: f.name, format: m.format });
        this.manifestsUpTo = epoch;
      }
      return out;
    }
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      // A directory that does not exist yet holds no files; it is looked for again.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw this.readFailed(dir, e);
    }
    return entries
      .filter(
        (e) => e.isFile() && !e.name.startsWith('.') && !e.name.startsWith('_') && !this.known.has(e.name),
      )
      .map((e) => e.name)
      .sort()
      .map((name) => ({ name, format: this.spec.format }));
  }

  private async read(name: string, format: FileFormat): Promise<unknown[]> {
    const path = join(this.spec.path, name);
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && this.known.has(name)) {
        throw new MillraceError(
          ErrorCode.SOURCE_DATA_LOST,
          `${this.spec.description}: ${name} is gone, and the checkpoint needs its rows`,
        );
      }
      throw this.readFailed(path, e);
    }
    try {
      return await decodeRows(bytes, format, path);
    } catch (e) {
      // The decoder's message names the file (and the line).
      throw new MillraceError(
        ErrorCode.SOURCE_READ_FAILED,
        `${this.spec.description}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  }

  private readFailed(path: string, cause: unknown): MillraceError {
    return new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `${this.spec.description}: cannot read ${path}: ${(cause as Error).message}`,
      { cause },
    );
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
