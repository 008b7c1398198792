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
import type { InMemoryStateStore } from './state-store.js';

export interface StateCheckpointerHooks {
  /** The state of `epoch` is durable. */
  durable(epoch: number): void;
  /** Writing it failed: the task fails. */
  failed(error: unknown): void;
}

interface Job {
  readonly epoch: number;
  readonly header: StateFileHeader;
  readonly chunks: Buffer[];
  readonly removed: string[];
  entries: number;
}

/**
 * Writes one stateful task's state to the checkpoint, off the record path. At the end of each
 * epoch the task calls {@link epochEnded}: the store freezes what changed (every
 * `minDeltasForSnapshot`-th version, everything) and a background job — one slice per turn of the
 * worker's event loop, between the host's steps — encodes and packs it, then writes
 * `<version>.changelog` or `.snapshot` atomically and reports the epoch durable. Rows keep flowing
 * the whole time; a key the operator touches before the job reaches it is encoded first.
 */
export class StateCheckpointer {
  private job: Job | null = null;
  private scheduled = false;
  private readonly dir: string;
  private made = false;
  /** File writes not finished yet. */
  private readonly writing = new Set<Promise<void>>();

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
    // A job still running finishes now (rare: it had a whole epoch to run).
    if (this.job !== null) this.finishJob();
    const version = epoch + 1;
    const full = version % this.minDeltasForSnapshot === 0;
    const removed = this.store.beginCheckpoint(full);
    const kind = full ? 'snapshot' : 'changelog';
    this.job = {
      epoch,
      header: {
        format: STATE_FILE_FORMAT,
        kind,
        version,
        operatorId: this.operatorId,
        partition: this.partition,
      },
      chunks: [],
      removed,
      entries: 0,
    };
    this.job.chunks.push(packStatePiece(this.job.header));
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.job === null) return;
      try {
        if (this.encodeSlice()) this.finishJob();
        else this.schedule();
      } catch (e) {
        this.job = null;
        this.hooks.failed(e);
      }
    });
  }

  /** Encodes and packs one slice; true when everything is encoded. */
  private encodeSlice(): boolean {
    const done = this.store.encodeSome(STATE_CHUNK_ENTRIES);
    this.pack(this.job!);
    return done;
  }

  private pack(job: Job): void {
    const chunk = this.store.drainEncoded();
    if (chunk === null) return;
    job.entries += chunk.keys.length;
    job.chunks.push(packStatePiece(['W', chunk.keys, chunk.values]));
  }

  /** Encodes what is left at once and starts the file write. */
  private finishJob(): void {
    const job = this.job!;
    this.job = null;
    this.store.encodeSome(Number.POSITIVE_INFINITY);
    this.pack(job);
    for (let i = 0; i < job.removed.length; i += STATE_CHUNK_ENTRIES) {
      job.chunks.push(packStatePiece(['r', job.removed.slice(i, i + STATE_CHUNK_ENTRIES)]));
    }
    job.chunks.push(packStatePiece(['end', job.entries, job.removed.length]));
    if (!this.made) {
      mkdirSync(this.dir, { recursive: true });
      this.made = true;
    }
    const path = join(this.dir, stateFileName(job.header.version, job.header.kind));
    const write = writeChunksAtomic(path, job.chunks).then(
      () => this.hooks.durable(job.epoch),
      (e: unknown) => this.hooks.failed(e),
    );
    this.writing.add(write);
    void write.finally(() => this.writing.delete(write));
  }

  /** Finishes the checkpoint in progress and resolves once every write has ended (the task ends). */
  async settle(): Promise<void> {
    if (this.job !== null) this.finishJob();
    while (this.writing.size > 0) await Promise.all(this.writing);
  }
}
