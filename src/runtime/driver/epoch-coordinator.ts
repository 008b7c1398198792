import type { CheckpointManager } from '../../checkpoint/manager.js';
import type { SinkCommitter } from '../../connectors/contract.js';
import type { SinkCommitMessage } from '../../connectors/sink-runtime.js';
import type { EpochCommit } from '../../metrics/progress.js';
import type { StateReport } from '../messages.js';
import { type PartitionWatermark, watermarkHeldBack } from './watermark-held-back.js';

export interface CoordinatorConfig {
  /** Partitions of each source, in plan order: every one reports its offset at every epoch end. */
  readonly sourcePartitions: readonly number[];
  /** Stateful tasks: each reports at every epoch end. */
  readonly statefulPartitions: number;
  /** Stateful tasks also write their state to the checkpoint: an epoch waits until it is durable. */
  readonly stateDurable: boolean;
  /** Watermark inputs of the plan. */
  readonly watermarkInputs: number;
  /** Where epochs are made durable (null: no checkpoint). */
  readonly checkpoint: CheckpointManager | null;
  /**
   * Real-time epochs (and micro-batches under asynchronous progress tracking) write their offsets
   * at commit; otherwise micro-batches wrote them before running.
   */
  readonly offsetsAtCommit: boolean;
  /**
   * Asynchronous progress tracking: the offset and commit logs are written for at most one epoch
   * every this many milliseconds of the query's clock (the epochs in between are committed in
   * memory only, and a restart goes on from the last one written). Null: every epoch is written.
   */
  readonly progressLogIntervalMs: number | null;
  /** The epoch the run resumed after (−1: none). */
  readonly committedEpoch: number;
  /** Removes old epochs' files beyond this many. */
  readonly retention: number;
  /** A sink that commits each epoch through the driver (the files sink's manifest), or null. */
  readonly sinkCommitter: SinkCommitter | null;
}

export interface CoordinatorHooks {
  /** Epoch `epoch` is committed (durably, when there is a checkpoint). */
  committed(epoch: number, reports: StateReport[], offsets: number[][], commit: EpochCommit): void;
  /** Writing the checkpoint failed: the query fails. */
  failed(error: unknown): void;
  now(): number;
}

interface Progress {
  acked: boolean;
  offsets: number[][];
  received: number;
  reports: StateReport[];
  /** Stateful tasks whose state of the epoch is durable. */
  durable: number;
  /** What the sink partitions reported. */
  sinkMessages: SinkCommitMessage[];
  /** Real-time mode: each source partition's own watermark at the barrier (null: not reported). */
  partitionWatermarks: (PartitionWatermark | null)[][];
}

/** What the commit file records of the partitions that held the watermark back, by source index. */
type Holds = ({ partition: number; partitionsBehind: number; heldBackMs?: number } | null)[];

/**
 * Decides when an epoch is committed: every sink partition passed its barrier, every source
 * partition reported where it stood at the barrier, and every stateful task reported its state
 * and watermarks. Then, in epoch order, the offset and commit logs are written (when there is a
 * checkpoint) and the epoch is announced. Commits never run concurrently and never skip an epoch.
 */
export class EpochCoordinator {
  private readonly pending = new Map<number, Progress>();
  private committedUpTo: number;
  private queuedUpTo: number;
  private chain: Promise<void> = Promise.resolve();
  private readonly totalSourcePartitions: number;
  private readonly waiters: { epoch: number; resolve: (r: StateReport[]) => void }[] = [];
  private readonly reportsOf = new Map<number, StateReport[]>();
  /** Asynchronous progress tracking: when the logs were last written, and what was not written since. */
  private loggedAt = Number.NEGATIVE_INFINITY;
  /** The checkpoint's log bytes at the last commit. */
  private logBytesBefore = 0;
  private unlogged: {
    epoch: number;
    offsets: number[][];
    watermark: number;
    watermarks: number[];
    holds: Holds;
  } | null = null;

  constructor(
    private readonly config: CoordinatorConfig,
    private readonly hooks: CoordinatorHooks,
  ) {
    this.committedUpTo = config.committedEpoch;
    this.queuedUpTo = config.committedEpoch;
    this.totalSourcePartitions = config.sourcePartitions.reduce((a, b) => a + b, 0);
  }

  get lastCommittedEpoch(): number {
    return this.committedUpTo;
  }

  private progress(epoch: number): Progress {
    let p = this.pending.get(epoch);
    if (p === undefined) {
      p = {
        acked: false,
        offsets: this.config.sourcePartitions.map((n) => new Array(n).fill(-1)),
        received: 0,
        reports: [],
        durable: 0,
        sinkMessages: [],
        partitionWatermarks: this.config.sourcePartitions.map((n) => new Array(n).fill(null)),
      };
      this.pending.set(epoch, p);
    }
    return p;
  }

  /** Every sink partition passed the barrier of `epoch`. */
  acked(epoch: number): void {
    this.progress(epoch).acked = true;
  }

  sourceOffset(epoch: number, source: number, partition: number, offset: number): void {
    const p = this.progress(epoch);
    const row = p.offsets[source];
    if (row === undefined || partition >= row.length) return;
    if (row[partition] === -1) p.received++;
    row[partition] = offset;
  }

  sourceWatermark(epoch: number, source: number, partition: number, value: number, behind: boolean): void {
    const row = this.progress(epoch).partitionWatermarks[source];
    if (row !== undefined && partition < row.length) row[partition] = { value, behind };
  }

  stateReport(report: StateReport): void {
    this.progress(report.epoch).reports.push(report);
  }

  sinkCommit(epoch: number, message: SinkCommitMessage): void {
    this.progress(epoch).sinkMessages.push(message);
  }

  stateWritten(epoch: number): void {
    this.progress(epoch).durable++;
  }

  /** Queues the commits of every complete epoch, in order (call after a full read of the rings). */
  check(): void {
    for (let e = this.queuedUpTo + 1; ; e++) {
      const p = this.pending.get(e);
      if (
        p === undefined ||
        !p.acked ||
        p.received < this.totalSourcePartitions ||
        p.reports.length < this.config.statefulPartitions ||
        (this.config.stateDurable && p.durable < this.config.statefulPartitions)
      ) {
        return;
      }
      this.pending.delete(e);
      this.queuedUpTo = e;
      const complete = performance.now();
      this.chain = this.chain.then(() => this.commit(e, p, complete));
    }
  }

  /** Resolves once every queued commit is written. */
  async flushed(): Promise<void> {
    await this.chain;
  }

  /**
   * Asynchronous progress tracking, at a graceful end: writes the logs of the last committed epoch
   * if it was committed in memory only, so the next run goes on exactly after it.
   */
  async logLastCommit(): Promise<void> {
    await this.chain;
    const last = this.unlogged;
    if (last === null || last.epoch !== this.committedUpTo) return;
    this.unlogged = null;
    try {
      await this.writeOffsets(last.epoch, last.offsets, last.watermark, last.watermarks);
      await this.writeCommit(last.epoch, last.watermark, last.watermarks, last.holds);
    } catch (e) {
      this.hooks.failed(e);
    }
  }

  /** Offsets written at commit, with the watermarks its commit file will hold (see OffsetEntry). */
  private async writeOffsets(
    epoch: number,
    offsets: number[][],
    watermark: number,
    watermarks: number[],
  ): Promise<void> {
    await this.config.checkpoint!.writeOffsets(epoch, offsets, {
      batchWatermarkMs: watermark,
      batchTimestampMs: this.hooks.now(),
      watermarks,
    });
  }

  private async writeCommit(
    epoch: number,
    watermark: number,
    watermarks: number[],
    holds: Holds,
  ): Promise<void> {
    const ckpt = this.config.checkpoint!;
    await ckpt.writeCommit(epoch, watermark, watermarks, holds);
    await ckpt.purge(epoch, this.config.retention);
    this.loggedAt = this.hooks.now();
    this.unlogged = null;
  }

  /** Resolves with the stateful tasks' reports once `epoch` is committed. */
  whenCommitted(epoch: number): Promise<StateReport[]> {
    if (epoch <= this.committedUpTo) return Promise.resolve(this.reportsOf.get(epoch) ?? []);
    return new Promise((resolve) => this.waiters.push({ epoch, resolve }));
  }

  /** Commits a complete epoch (`complete`: when it became so, ms on the performance clock). */
  private async commit(epoch: number, p: Progress, complete: number): Promise<void> {
    const ckpt = this.config.checkpoint;
    // The watermark of each input is what the furthest stateful task had heard of it.
    const watermarks = Array.from({ length: this.config.watermarkInputs }, (_, i) =>
      Math.max(Number.NEGATIVE_INFINITY, ...p.reports.map((r) => r.inputs[i] ?? Number.NEGATIVE_INFINITY)),
    );
    const nextWatermark = Math.max(Number.NEGATIVE_INFINITY, ...p.reports.map((r) => r.watermark));
    const holds = p.partitionWatermarks.map(holdOf);
    const interval = this.config.progressLogIntervalMs;
    const log = ckpt !== null && (interval === null || this.hooks.now() - this.loggedAt >= interval);
    try {
      // Offsets, then the sink's own commit, then the commit file. A crash before the sink's
      // commit redoes the epoch over the same offsets; one after it finishes the commit from what
      // the offsets file holds (CheckpointManager's recovery), since a real-time epoch's redo may
      // close windows at other points than the run that committed it to the sink.
      if (log && this.config.offsetsAtCommit) {
        await this.writeOffsets(epoch, p.offsets, nextWatermark, watermarks);
      }
      await this.config.sinkCommitter?.commit(epoch, p.sinkMessages);
      if (log) {
        await this.writeCommit(epoch, nextWatermark, watermarks, holds);
      } else if (ckpt !== null) {
        this.unlogged = { epoch, offsets: p.offsets, watermark: nextWatermark, watermarks, holds };
      }
    } catch (e) {
      this.hooks.failed(e);
      return;
    }
    this.committedUpTo = epoch;
    this.reportsOf.set(epoch, p.reports);
    this.reportsOf.delete(epoch - 2);
    const logBytes = (ckpt?.logBytesWritten ?? 0) - this.logBytesBefore;
    this.logBytesBefore += logBytes;
    this.hooks.committed(epoch, p.reports, p.offsets, {
      epoch,
      committedAt: this.hooks.now(),
      durationMs: performance.now() - complete,
      logBytes,
    });
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (w.epoch <= epoch) {
        this.waiters.splice(i, 1);
        w.resolve(this.reportsOf.get(w.epoch) ?? []);
      }
    }
  }
}

/** The partition of a source that held the watermark back at the barrier, as the commit records it. */
function holdOf(partitions: readonly (PartitionWatermark | null)[]): Holds[number] {
  const held = watermarkHeldBack(partitions);
  if (held === null) return null;
  return {
    partition: held.watermarkHeldByPartition,
    partitionsBehind: held.partitionsBehind,
    ...(held.watermarkHeldBackMs === undefined ? {} : { heldBackMs: held.watermarkHeldBackMs }),
  };
}
