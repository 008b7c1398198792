import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDirectory } from '../../checkpoint/files.js';
import type { SinkRuntime } from '../sink-runtime.js';
import type { FilesSinkSpec } from '../spec.js';
import type { FilesCommitMessage } from './committer.js';
import { EXTENSIONS, encodeRows } from './formats.js';

/** JSON lines are appended to the epoch's file once this many bytes are waiting. */
const SPILL_BYTES = 1 << 20;

/**
 * One partition of the files sink. Rows of an epoch go to a temporary file (JSON lines are written
 * as they accumulate, Arrow is written at the epoch's end: a record batch needs its rows); at the
 * epoch's end the file is flushed, `fsync`ed and renamed to `part-<epoch>-<partition>-<attempt>`,
 * and the partition reports it to the driver, which lists it in the epoch's manifest at commit.
 * The attempt tag keeps a redone epoch's files apart from an interrupted attempt's.
 */
export class FilesSinkRuntime implements SinkRuntime {
  private readonly attempt = randomBytes(4).toString('hex');
  private lines: string[] = [];
  private waitingBytes = 0;
  private rows: unknown[] = [];
  private count = 0;
  private bytes = 0;
  private file: { handle: FileHandle; temp: string } | null = null;
  /** File operations of the current epoch, in order. */
  private chain: Promise<void> = Promise.resolve();
  private madeDir = false;

  constructor(
    private readonly spec: FilesSinkSpec,
    private readonly partition: number,
  ) {}

  write(row: unknown): undefined {
    this.count++;
    if (this.spec.format === 'arrow') {
      this.rows.push(row);
      return undefined;
    }
    const line = `${JSON.stringify(row)}\n`;
    this.lines.push(line);
    this.waitingBytes += line.length;
    if (this.waitingBytes >= SPILL_BYTES) this.spill();
    return undefined;
  }

  epochEnd(epoch: number): Promise<FilesCommitMessage> | FilesCommitMessage {
    if (this.count === 0) return { file: null };
    const name = `part-${String(epoch).padStart(6, '0')}-${String(this.partition).padStart(3, '0')}-${this.attempt}${EXTENSIONS[this.spec.format]}`;
    const rows = this.count;
    if (this.spec.format === 'arrow') {
      const rows = this.rows;
      this.rows = [];
      this.enqueue(async () => this.append(await encodeRows(rows, 'arrow')));
    } else {
      this.spill();
    }
    const done = this.chain.then(() => this.finish(name));
    this.chain = done.then(() => {});
    this.count = 0;
    return done.then((bytes) => ({ file: { name, rows, bytes } }));
  }

  close(error: Error | null): Promise<void> | undefined {
    // Rows after the last barrier belong to no epoch that can commit: they are dropped with the
    // temporary file (a graceful stop ends with a barrier, so there are none then).
    if (this.file === null && this.count === 0) return undefined;
    this.lines = [];
    this.rows = [];
    this.count = 0;
    const closing = this.chain.then(() => this.discard());
    this.chain = closing;
    return error === null ? closing : (closing.catch(() => {}) as Promise<void>);
  }

  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(step);
  }

  private spill(): void {
    if (this.lines.length === 0) return;
    const text = Buffer.from(this.lines.join(''));
    this.lines = [];
    this.waitingBytes = 0;
    this.enqueue(() => this.append(text));
  }

  private async append(bytes: Uint8Array): Promise<void> {
    if (this.file === null) {
      if (!this.madeDir) {
        await mkdir(this.spec.path, { recursive: true });
        this.madeDir = true;
      }
      const temp = join(
        this.spec.path,
        `.part-${this.partition}-${this.attempt}-${randomBytes(3).toString('hex')}.tmp`,
      );
      this.file = { handle: await open(temp, 'w'), temp };
      this.bytes = 0;
    }
    await this.file.handle.writeFile(bytes);
    this.bytes += bytes.length;
  }

  private async finish(name: string): Promise<number> {
    const f = this.file!;
    this.file = null;
    await f.handle.sync();
    await f.handle.close();
    await rename(f.temp, join(this.spec.path, name));
    await syncDirectory(this.spec.path);
    return this.bytes;
  }

  private async discard(): Promise<void> {
    const f = this.file;
    this.file = null;
    if (f === null) return;
    await f.handle.close().catch(() => {});
    await unlink(f.temp).catch(() => {});
  }
}
