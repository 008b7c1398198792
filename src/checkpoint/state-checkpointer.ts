import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { ErrorCode, MillraceError } from '../errors.js';
import { KEY_GROUPS } from '../state/key-groups.js';
import type { CheckpointedStore, EncodedChunk, StateCheckpoint } from '../state/store-contract.js';
import { writeChunksAtomic } from './files.js';
import {
  decodeStatePiece,
  type OpenedStateFile,
  openStateFile,
  packEntriesPiece,
  packEvictionPiece,
  packRemovalsPiece,
  packStatePiece,
  packTablePiece,
  restorePlan,
  STATE_CHUNK_ENTRIES,
  STATE_FILE_FORMAT,
  type StateFileHeader,
  type StateFilePiece,
  stateFileName,
} from './state-files.js';

export interface StateCheckpointerHooks {
  /** The state of `epoch` is durable. */
  durable(epoch: number): void;
  /** Writing it failed: the task fails. */
  failed(error: unknown): void;
}

interface Job {
  readonly epoch: number;
  readonly header: StateFileHeader;
  readonly freeze: StateCheckpoint;
  readonly chunks: Uint8Array[];
  /** CRC-32 of the chunks so far, computed as each is added (not all at once when written). */
  crc: number;
  entries: number;
  /** Every key is encoded: what slices are left pack the key groups' last entries. */
  encoded: boolean;
}

/**
 * Checkpoints at most this many epochs behind the one being encoded: beyond it, the oldest is
 * finished at once (rows wait), so a task whose encoding cannot keep up stops piling up frozen
 * sets — each one costs a lookup or two per touched key — and epochs waiting to commit.
 */
const MAX_JOBS = 4;

/**
 * Entries a slice run in the host's idle time encodes (≈ 0.3 ms): a row that arrives during one
 * waits at most that long.
 */
const IDLE_SLICE_ENTRIES = 256;

/**
 * Jobs waiting from which slices also run between busy steps, taking time from the rows: the
 * checkpoint has fallen two epochs behind because the task has too little idle time.
 */
const CATCH_UP_JOBS = 3;

/**
 * Writes one stateful task's state to the checkpoint, off the record path. At the end of each
 * epoch the task calls {@link epochEnded}: the store freezes what changed (every
 * `minDeltasForSnapshot`-th version, everything) and a background job encodes and packs it, then
 * writes `<version>.changelog` or `.snapshot` atomically and reports the epoch durable. Rows keep
 * flowing the whole time; a key the operator touches before the job reaches it is encoded first.
 *
 * The job runs in the worker's idle time: the host calls {@link idleSlice} whenever a pass over
 * its tasks found no row to process, and each slice is short, so rows wait for a checkpoint at most
 * one slice. Only when the task has too little idle time, and jobs pile up behind the oldest, do
 * slices also run at every turn of the event loop (between the host's busy steps), longer the
 * further behind; at MAX_JOBS the oldest is finished at once.
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
  /** The task ended: no more background work. */
  private stopped = false;
  /**
   * Time spent committing versions so far (ms, cumulative): packing a version's last pieces and
   * writing its file, until it is durable. Spark's commitTimeMs.
   */
  commitMs = 0;
  /** Bytes of state files written so far (the snapshots and changelogs, as on disk; once durable). */
  bytesWritten = 0;

  constructor(
    private readonly store: CheckpointedStore,
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
   * after it). Every file is read and checked now. `lazy` (see
   * {@link InMemoryStateStore.restoreGroups}): the entries of files written by key group are loaded
   * a key group when a row needs it and the rest in the background, a group per turn of the event
   * loop; otherwise, and for files of older formats, all at once. Returns how many files were read.
   */
  restore(version: number, lazy = false): number {
    const plan = restorePlan(this.dir, version);
    const files = plan.map((f) => ({
      path: f.path,
      file: openStateFile(f.path, {
        kind: f.kind,
        version: f.version,
        operatorId: this.operatorId,
        partition: this.partition,
      }),
    }));
    const last = files.at(-1)?.file;
    if (last === undefined) return 0;
    if (files.every(({ file }) => file.pieces !== null && file.header.keyGroups === KEY_GROUPS)) {
      const pieces: StateFilePiece[][] = Array.from({ length: KEY_GROUPS }, () => []);
      for (const { file } of files) {
        // A file's evictions (every key group's) apply before its entries.
        for (const piece of file.pieces!) if (piece.tag === 'X') for (const list of pieces) list.push(piece);
        for (const piece of file.pieces!) if (piece.tag !== 'X') pieces[piece.group]!.push(piece);
      }
      this.store.restoreGroups(
        {
          groups: KEY_GROUPS,
          pieces,
          size: last.size!,
          keyChars: last.keyChars!,
          decode: (piece) => decodeStatePiece((piece as StateFilePiece).path, piece),
        },
        lazy,
      );
      if (lazy) this.scheduleLoading();
    } else {
      for (const { path, file } of files) this.loadWhole(path, file);
    }
    return files.length;
  }

  /** Loads a file of an older format (no key groups), or one of a chain that mixes formats. */
  private loadWhole(path: string, file: OpenedStateFile): void {
    // Within a file the keys written and removed are disjoint (see state-files.ts).
    if (file.pieces === null) {
      this.store.loadRemoved(file.removed);
      for (const chunk of file.chunks) this.store.loadChunk(chunk.keys, chunk.values, chunk.perEntry);
      return;
    }
    for (const piece of file.pieces) {
      if (piece.tag === 'T' || piece.tag === 'X') {
        throw new MillraceError(
          ErrorCode.CHECKPOINT_CORRUPT,
          `checkpoint file ${path} holds a group table, and other files of its chain do not`,
        );
      }
      const { keys, values } = decodeStatePiece(path, piece);
      if (piece.removal) this.store.loadRemoved(keys);
      else this.store.loadChunk(keys, values, false);
    }
  }

  /** A lazy restore: loads the key groups no row asked for, one per turn of the event loop. */
  private scheduleLoading(): void {
    setImmediate(() => {
      if (this.stopped) return;
      try {
        if (!this.store.loadSome(1)) this.scheduleLoading();
      } catch (e) {
        this.hooks.failed(e);
      }
    });
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
      keyGroups: KEY_GROUPS,
    };
    this.jobs.push({
      epoch,
      header,
      freeze: this.store.beginCheckpoint(full),
      chunks: [],
      crc: 0,
      entries: 0,
      encoded: false,
    });
    add(this.jobs.at(-1)!, [packStatePiece(header)]);
    if (this.jobs.length >= CATCH_UP_JOBS) this.schedule();
  }

  /** Checkpoints frozen and not yet fully encoded (their files not begun). */
  get waiting(): number {
    return this.jobs.length;
  }

  /**
   * The host has nothing else to do: runs one short slice of the oldest job. Returns false when no
   * job is left (nothing was done).
   */
  idleSlice(): boolean {
    if (this.jobs.length === 0) return false;
    this.runSlice(IDLE_SLICE_ENTRIES);
    return true;
  }

  /** Catch-up slices, one per turn of the event loop while jobs wait (see the class comment). */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const behind = this.jobs.length - CATCH_UP_JOBS + 1;
      if (behind <= 0) return;
      this.runSlice(STATE_CHUNK_ENTRIES * behind);
      this.schedule();
    });
  }

  private runSlice(budget: number): void {
    try {
      this.encodeSlice(budget);
    } catch (e) {
      this.jobs.length = 0;
      this.hooks.failed(e);
    }
  }

  /**
   * Encodes and packs up to `budget` entries of the oldest job, and packs what the touches encoded
   * for the others (so no job holds many encoded entries unpacked); once every key of the oldest is
   * encoded, packs the rest of its key groups a slice at a time, then writes it.
   */
  private encodeSlice(budget: number): void {
    const job = this.jobs[0]!;
    if (!job.encoded) {
      job.encoded = job.freeze.encodeSome(budget);
      for (const j of this.jobs) this.pack(j, j.freeze.drain());
      return;
    }
    const rest = job.freeze.drainSome(budget);
    if (rest.length > 0) this.pack(job, rest);
    else this.write(this.jobs.shift()!);
  }

  private pack(job: Job, chunks: readonly EncodedChunk[]): void {
    for (const chunk of chunks) {
      job.entries += chunk.count;
      add(
        job,
        chunk.keys === null
          ? packTablePiece(chunk.group, chunk.count, chunk.values as Uint8Array)
          : packEntriesPiece(chunk.group, chunk.keys, chunk.values),
      );
    }
  }

  /** Encodes what is left of the oldest job at once and starts its file write. */
  private finishJob(): void {
    const job = this.jobs.shift()!;
    job.freeze.encodeSome(Number.POSITIVE_INFINITY);
    this.write(job);
  }

  /** Packs the job's last entries, its removals and its end, and writes its file after the previous. */
  private write(job: Job): void {
    const began = performance.now();
    this.pack(job, job.freeze.drain(true));
    const { removed, totals, evictedUpTo } = job.freeze;
    let removals = 0;
    removed.forEach((keys, group) => {
      if (keys.length === 0) return;
      removals += keys.length;
      add(job, packRemovalsPiece(group, keys));
    });
    if (evictedUpTo !== undefined && evictedUpTo !== null) {
      removals++;
      add(job, packEvictionPiece(evictedUpTo));
    }
    add(job, [packStatePiece(['end', job.entries, removals, totals.size, totals.keyChars])]);
    if (!this.made) {
      mkdirSync(this.dir, { recursive: true });
      this.made = true;
    }
    const path = join(this.dir, stateFileName(job.header.version, job.header.kind));
    // In order: a failed write fails the task, and the writes after it are not reported durable.
    this.commitMs += performance.now() - began;
    this.lastWrite = this.lastWrite.then(() => {
      const started = performance.now();
      return writeChunksAtomic(path, job.chunks, job.crc).then((bytes) => {
        this.bytesWritten += bytes;
        this.commitMs += performance.now() - started;
        this.hooks.durable(job.epoch);
      });
    });
    this.lastWrite.catch((e: unknown) => this.hooks.failed(e));
  }

  /** Finishes the checkpoints in progress and resolves once every write has ended (the task ends). */
  async settle(): Promise<void> {
    this.stopped = true;
    while (this.jobs.length > 0) this.finishJob();
    await this.lastWrite.catch(() => {});
  }
}

/** Adds chunks to a job's file, and to its CRC (a snapshot's 7 MB at once stopped rows for ≈ 5 ms). */
function add(job: Job, chunks: readonly Uint8Array[]): void {
  for (const c of chunks) {
    job.chunks.push(c);
    job.crc = crc32(c, job.crc);
  }
}
