import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeChunksAtomic } from '../checkpoint/files.js';
import {
  packStatePiece,
  readStateFile,
  restorePlan,
  STATE_CHUNK_ENTRIES,
  STATE_FILE_FORMAT,
  type StateFileHeader,
  stateFileName,
} from '../checkpoint/state-files.js';
import type { InMemoryStateStore, StateFreeze } from './state-store.js';

export interface StateCheckpointerHooks {
  /** The state of `epoch` is durable. */
  durable(epoch: number): void;
  /** Writing it failed: the task fails. */
  failed(error: unknown): void;
}

interface Job {
  readonly epoch: number;
  readonly header: StateFileHeader;
  readonly freeze: StateFreeze<unknown>;
  readonly chunks: Buffer[];
  entries: number;
}

/**
 * Checkpoints at most this many epochs behind the one being encoded: beyond it, the oldest is
 * finished at once (rows wait), so a task whose encoding cannot keep up stops piling up frozen
 * sets — each one costs a lookup or two per touched key — and epochs waiting to commit.
 */
const MAX_JOBS = 4;

/**
 * Writes one stateful task's state to the checkpoint, off the record path. At the end of each
 * epoch the task calls {@link epochEnded}: the store freezes what changed (every
 * `minDeltasForSnapshot`-th version, everything) and a background job — one slice per turn of the
 * worker's event loop, between the host's steps — encodes and packs it, then writes
 * `<version>.changelog` or `.snapshot` atomically and reports the epoch durable. Rows keep flowing
 * the whole time; a key the operator touches before the job reaches it is encoded first.
 *
 * A job may outlive its epoch (a snapshot of 1 M keys takes seconds): the next epochs' jobs queue
 * behind it, each frozen at its own epoch's end, and are encoded and written in order once it is
 * done, so the epochs become durable — and commit — in order, later, while the rows go on.
 */
export class StateCheckpointer {
  /** Jobs not fully encoded yet, oldest first: slices go to the oldest. */
  private readonly jobs: Job[] = [];
  private scheduled = false;
  private readonly dir: string;
  private made = false;
  /** The last file write started: each write starts after the previous one ended. */
  private lastWrite: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: InMemoryStateStore<unknown>,
    root: string,
    private readonly operatorId: number,
    private readonly partition: number,
    private readonly minDeltasForSnapshot: number,
    private readonly hooks: StateCheckpointerHooks,
  ) {
    this.dir = join(root, 'state', String(operatorId), String(partition));
    store.trackChanges();
  }

  /**
   * Restores the state as of `version` (the newest snapshot at or below it, then the changelogs
   * after it). Returns how many files were read.
   */
  restore(version: number): number {
    const files = restorePlan(this.dir, version);
    for (const f of files) {
      const content = readStateFile(f.path, {
        kind: f.kind,
        version: f.version,
        operatorId: this.operatorId,
        partition: this.partition,
      });
      // Within a file the keys written and removed are disjoint (see state-files.ts).
      this.store.loadRemoved(content.removed);
      for (const chunk of content.chunks) this.store.loadChunk(chunk.keys, chunk.values, chunk.perEntry);
    }
    return files.length;
  }

  /** The epoch ended: its state becomes version `epoch + 1`, written in the background. */
  epochEnded(epoch: number): void {
    if (this.jobs.length >= MAX_JOBS) this.finishJob();
    const version = epoch + 1;
    const full = version % this.minDeltasForSnapshot === 0;
    const kind = full ? 'snapshot' : 'changelog';
    const header: StateFileHeader = {
      format: STATE_FILE_FORMAT,
      kind,
      version,
      operatorId: this.operatorId,
      partition: this.partition,
    };
    this.jobs.push({
      epoch,
      header,
      freeze: this.store.beginCheckpoint(full),
      chunks: [packStatePiece(header)],
      entries: 0,
    });
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.jobs.length === 0) return;
      try {
        this.encodeSlice();
        if (this.jobs.length > 0) this.schedule();
      } catch (e) {
        this.jobs.length = 0;
        this.hooks.failed(e);
      }
    });
  }

  /**
   * Encodes and packs one slice of the oldest job, and packs what the touches encoded for the
   * others (so no job holds many encoded entries unpacked); writes the oldest once it is done.
   * A slice grows with the jobs waiting, so a checkpoint that fell behind catches up in longer
   * slices rather than in one stop at MAX_JOBS.
   */
  private encodeSlice(): void {
    const job = this.jobs[0]!;
    const done = job.freeze.encodeSome(STATE_CHUNK_ENTRIES * this.jobs.length);
    for (const j of this.jobs) this.pack(j);
    if (done) this.write(this.jobs.shift()!);
  }

  private pack(job: Job): void {
    const chunk = job.freeze.drain();
    if (chunk === null) return;
    job.entries += chunk.keys.length;
    job.chunks.push(packStatePiece(['W', chunk.keys, chunk.values]));
  }

  /** Encodes what is left of the oldest job at once and starts its file write. */
  private finishJob(): void {
    const job = this.jobs.shift()!;
    job.freeze.encodeSome(Number.POSITIVE_INFINITY);
    this.write(job);
  }

  /** Packs the job's last entries, its removals and its end, and writes its file after the previous. */
  private write(job: Job): void {
    this.pack(job);
    const removed = job.freeze.removed;
    for (let i = 0; i < removed.length; i += STATE_CHUNK_ENTRIES) {
      job.chunks.push(packStatePiece(['r', removed.slice(i, i + STATE_CHUNK_ENTRIES)]));
    }
    job.chunks.push(packStatePiece(['end', job.entries, removed.length]));
    if (!this.made) {
      mkdirSync(this.dir, { recursive: true });
      this.made = true;
    }
    const path = join(this.dir, stateFileName(job.header.version, job.header.kind));
    // In order: a failed write fails the task, and the writes after it are not reported durable.
    this.lastWrite = this.lastWrite.then(() =>
      writeChunksAtomic(path, job.chunks).then(() => this.hooks.durable(job.epoch)),
    );
    this.lastWrite.catch((e: unknown) => this.hooks.failed(e));
  }

  /** Finishes the checkpoints in progress and resolves once every write has ended (the task ends). */
  async settle(): Promise<void> {
    while (this.jobs.length > 0) this.finishJob();
    await this.lastWrite.catch(() => {});
  }
}
