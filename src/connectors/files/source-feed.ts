import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { BadSourceRecord, DriverFeed, FeedContext, FeedPort } from '../contract.js';
import { FeedCursor } from '../feed-cursor.js';
import type { FilesSourceSpec } from '../spec.js';
import { BadFileRecord, clipText, decodeRecords, type FileFormat } from './formats.js';
import { MANIFEST_DIR, manifestEpochs, readManifest } from './manifest.js';
import { FILES_LOG_DIR, FilesSourceLog, type LoggedFile } from './source-log.js';

/**
 * Records of the files after the one being sent are read ahead while fewer than this many wait:
 * the next rows are at hand when the ring takes them, and a backlog of files stays on disk.
 */
const READ_AHEAD_RECORDS = 16_384;

/** A file the source took: where its records start, and when it was found (their source time). */
interface TakenFile extends LoggedFile {
  readonly start: number;
  readonly foundAt: number;
}

/** The records of a taken file, read and not all sent yet. */
interface LoadedFile {
  readonly index: number;
  readonly start: number;
  readonly records: unknown[];
}

/**
 * The driver's end of a files source (one partition): it lists the directory, takes new files in
 * name order, records them in the checkpoint, and sends their records through the source task's
 * feed ring — at once in real-time mode, when a batch takes them in micro-batch mode. Offsets
 * count records (rows and bad records) over the files in the order they were taken.
 *
 * Only the files being sent are held in memory: a file is read when it is taken (to count its
 * records), kept if its records are next to send, and read again when its turn comes otherwise.
 * Records go to the ring only as fast as it takes them (see FeedCursor), so a source far ahead of
 * a slow query holds at most about {@link READ_AHEAD_RECORDS} records, or one file, in memory.
 */
export class FilesSourceFeed implements DriverFeed {
  /** Called after new rows were found (micro-batch triggers react to new data). */
  onData: (() => void) | undefined;
  readonly cursors: readonly FeedCursor[];
  private readonly cursor: FeedCursor;
  private readonly files: TakenFile[] = [];
  private readonly known = new Set<string>();
  private total = 0;
  /** Files read and not wholly sent, in order and contiguous: the first holds the cursor's position. */
  private readonly loaded: LoadedFile[] = [];
  /** The next file to read into `loaded` is being read. */
  private loading = false;
  private log: FilesSourceLog | null = null;
  /** Discoveries run one after another; a refresh waits for the ones before it. */
  private chain: Promise<boolean> = Promise.resolve(false);
  private manifestsUpTo = -1;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private failed: (e: unknown) => void = () => {};
  private readonly now: () => number;

  constructor(
    readonly spec: FilesSourceSpec,
    context: FeedContext,
  ) {
    this.now = context.now;
    this.cursor = new FeedCursor(context.ports[0]!, {
      available: () => this.loadedEnd(),
      write: (w, offset) => this.write(w, offset),
      need: () => this.readAhead(),
      pending: () => this.loadedEnd() < this.total,
    });
    this.cursors = [this.cursor];
  }

  /**
   * Takes the files the checkpoint says were taken (the log in `dir/files`; null without a
   * checkpoint), then looks for new ones. A listed file not wholly before the resume offset that is
   * gone fails with `SOURCE_DATA_LOST`: its rows cannot be read again. `failed` gets a later read
   * error (a file changed since it was taken).
   */
  async open(dir: string | null, failed: (e: unknown) => void = () => {}): Promise<void> {
    await this.openLog(dir === null ? null : join(dir, FILES_LOG_DIR), failed);
    await this.refresh();
  }

  private async openLog(logDir: string | null, failed: (e: unknown) => void): Promise<void> {
    this.failed = failed;
    if (logDir !== null) {
      this.log = new FilesSourceLog(logDir);
      const now = this.now();
      for (const f of await this.log.read()) this.take(f, now);
    }
    const resume = this.cursor.sent;
    if (resume > this.total) {
      throw new MillraceError(
        ErrorCode.CHECKPOINT_CORRUPT,
        `${this.spec.description}: the checkpoint's offset ${resume} is past the ${this.total} records of the ` +
          `${this.files.length} file(s) its log ${logDir ?? ''} lists` +
          (logDir === null ? '' : ` (entries 0 to ${this.log!.entries - 1}): an entry after them is missing`),
      );
    }
    for (const f of this.files) {
      if (f.start + f.rows <= resume || f.rows === 0) continue;
      try {
        await stat(join(this.spec.path, f.name));
      } catch (e) {
        throw this.readError(f.name, e);
      }
    }
    await this.readNext();
  }

  /** A resumed run: rows before the committed offset are not sent again. */
  resumeAt(offsets: readonly number[]): void {
    this.cursor.skipTo(offsets[0] ?? 0);
  }

  /**
   * Looks for new files now (after any look already under way). In real-time mode their rows go
   * to the ring as it takes them; the promise does not wait for that.
   */
  async refresh(): Promise<void> {
    const run = this.chain.then(() => this.discover());
    this.chain = run.catch(() => false);
    await run;
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

  /** Ends epoch `epoch` at `end`: its records up to `end` are sent, then the batch's marker. */
  endAt(_partition: number, epoch: number, end: number): void {
    const upTo = Math.min(end, this.total);
    this.cursor.endEpochAt(upTo, epoch, end);
    this.cursor.sendUpTo(upTo);
  }

  /** Real-time mode: sends every record not sent yet, and from now on records as they are found. */
  feedAll(): void {
    if (this.closed) return;
    this.cursor.sendUpTo(Number.POSITIVE_INFINITY);
  }

  latestOffsets(): number[] {
    return [this.total];
  }

  /**
   * Progress counters (`sources[].metrics`): files taken, and records held in memory — read and
   * not sent, or waiting for space in the ring.
   */
  metrics(): Record<string, number> {
    const unsent = Math.max(0, this.loadedEnd() - this.cursor.sent);
    return { filesTaken: this.files.length, recordsInMemory: unsent + this.cursor.queuedFrames };
  }

  private take(file: LoggedFile, foundAt: number): void {
    this.files.push({ ...file, start: this.total, foundAt });
    this.known.add(file.name);
    this.total += file.rows;
  }

  // --- sending ---------------------------------------------------------------------------------

  /** The end of the records read and contiguous from the cursor's position. */
  private loadedEnd(): number {
    const last = this.loaded.at(-1);
    return last === undefined ? this.cursor.sent : last.start + last.records.length;
  }

  private write(w: FeedPort, offset: number): boolean {
    let first = this.loaded[0]!;
    while (offset >= first.start + first.records.length) {
      this.loaded.shift();
      first = this.loaded[0]!;
    }
    const file = this.files[first.index]!;
    const record = first.records[offset - first.start];
    const fitted =
      record instanceof BadFileRecord
        ? this.writeBad(w, file.name, record, file.foundAt, offset)
        : this.writeRow(w, file.name, record, file.foundAt, offset);
    if (offset + 1 === first.start + first.records.length) this.loaded.shift();
    if (this.loadedEnd() - offset < READ_AHEAD_RECORDS) this.readAhead();
    return fitted;
  }

  private writeRow(w: FeedPort, file: string, row: unknown, foundAt: number, offset: number): boolean {
    try {
      return w.row(row, offset, foundAt);
    } catch (e) {
      // A row too large for the ring is a bad record of its file, like one that does not parse.
      const reason = `cannot be sent: ${(e as Error).message}`;
      return this.writeBad(
        w,
        file,
        new BadFileRecord(0, clipText(JSON.stringify(row)), reason),
        foundAt,
        offset,
      );
    }
  }

  private writeBad(w: FeedPort, file: string, r: BadFileRecord, foundAt: number, offset: number): boolean {
    const record: BadSourceRecord = { file, line: r.line, text: r.text, reason: r.reason };
    return w.badRecord(record, offset, foundAt);
  }

  /** Reads the next file into memory if fewer than READ_AHEAD_RECORDS wait (in the background). */
  private readAhead(): void {
    if (this.loading || this.closed) return;
    if (this.loadedEnd() - this.cursor.sent >= READ_AHEAD_RECORDS) return;
    void this.readNext().then(
      (read) => {
        if (read && !this.closed) this.cursor.pump();
      },
      (e) => {
        if (!this.closed) this.failed(e);
      },
    );
  }

  /** Reads the next taken file after those in memory, if any; true when it did. */
  private async readNext(): Promise<boolean> {
    if (this.loading) return false;
    const index = this.nextToLoad();
    if (index < 0) return false;
    this.loading = true;
    try {
      const f = this.files[index]!;
      const records = await this.read(f.name, f.format);
      if (records.length !== f.rows) {
        throw new MillraceError(
          ErrorCode.SOURCE_DATA_LOST,
          `${this.spec.description}: ${f.name} held ${f.rows} records when it was taken and holds ${records.length} now; ` +
            'files must not change once they are in the directory',
        );
      }
      if (this.nextToLoad() !== index) return false;
      this.loaded.push({ index, start: f.start, records });
      return true;
    } finally {
      this.loading = false;
    }
  }

  /** The taken file to read next (-1: none): the first with records at or after what is in memory. */
  private nextToLoad(): number {
    const from = this.loadedEnd();
    for (let i = this.fileAt(from); i < this.files.length; i++) {
      const f = this.files[i]!;
      if (f.rows > 0 && f.start + f.rows > from) return i;
    }
    return -1;
  }

  /** The index of the file holding `offset` (binary search over the starts). */
  private fileAt(offset: number): number {
    let lo = 0;
    let hi = this.files.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.files[mid]!.start + this.files[mid]!.rows <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // --- discovery -------------------------------------------------------------------------------

  private async discover(): Promise<boolean> {
    if (this.closed) return false;
    const found = await this.newFiles();
    let records = 0;
    // Files are read one at a time to count their records, and recorded in batches: the first
    // rows of a large backlog go out before the last files are read.
    let batch: { file: LoggedFile; records: unknown[] | null }[] = [];
    let batchRecords = 0;
    for (const f of found) {
      if (this.closed) return false;
      const read = await this.read(f.name, f.format);
      const keep = batchRecords + read.length <= READ_AHEAD_RECORDS;
      batch.push({
        file: { name: f.name, format: f.format, rows: read.length },
        records: keep ? read : null,
      });
      batchRecords += read.length;
      if (batchRecords >= READ_AHEAD_RECORDS) {
        records += await this.record(batch);
        batch = [];
        batchRecords = 0;
      }
    }
    records += await this.record(batch);
    if (records === 0 || this.closed) return false;
    this.onData?.();
    return true;
  }

  /**
   * Records newly taken files in the checkpoint — before a record of them is sent, so no committed
   * offset can point past the log — then takes them. Records read with them are kept when they
   * are next to send. Returns how many records they hold.
   */
  private async record(batch: readonly { file: LoggedFile; records: unknown[] | null }[]): Promise<number> {
    if (batch.length === 0) return 0;
    await this.log?.append(batch.map((b) => b.file));
    if (this.closed) return 0;
    const foundAt = this.now();
    let records = 0;
    for (const b of batch) {
      const index = this.files.length;
      this.take(b.file, foundAt);
      records += b.file.rows;
      const room = this.loadedEnd() - this.cursor.sent < READ_AHEAD_RECORDS;
      if (b.records !== null && b.file.rows > 0 && room && !this.loading && this.nextToLoad() === index) {
        this.loaded.push({ index, start: this.files[index]!.start, records: b.records });
      }
    }
    this.cursor.pump();
    this.readAhead();
    return records;
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
    let bytes: Buffer;
    try {
      bytes = await readFile(join(this.spec.path, name));
    } catch (e) {
      throw this.readError(name, e);
    }
    return decodeRecords(bytes, format);
  }

  /** A taken file that is gone cannot be read again (`SOURCE_DATA_LOST`); others fail to read. */
  private readError(name: string, e: unknown): MillraceError {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' && this.known.has(name)) {
      return new MillraceError(
        ErrorCode.SOURCE_DATA_LOST,
        `${this.spec.description}: ${name} is gone, and the checkpoint needs its rows`,
      );
    }
    return this.readFailed(join(this.spec.path, name), e);
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
