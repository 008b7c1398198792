import { mkdir, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, MillraceError } from '../errors.js';
import type { AnalyzedPlan } from '../plan/analyze.js';
import { EpochLogs, type OffsetEntry, type SourceOffsets } from './epoch-logs.js';
import { readCheckedIfExists, writeFileAtomic } from './files.js';
import { CheckpointLayout } from './layout.js';
import { CheckpointLock } from './lock.js';
import { type CheckpointMetadata, describePlan, readMetadata, writeMetadata } from './metadata.js';
import { listStateVersions, stateFileName } from './state-files.js';

/** Where a run starts from: fresh, or after the last committed epoch of an earlier run. */
export interface RecoveryPoint {
  readonly queryId: string;
  /** The last committed epoch (−1: none). */
  readonly committedEpoch: number;
  /** The first epoch this run writes. */
  readonly nextEpoch: number;
  /** Where each source partition resumes (per source in plan order, per partition). */
  readonly startOffsets: readonly (readonly number[])[];
  /** Each watermark input's value at the committed epoch (−Infinity: none). */
  readonly watermarks: readonly number[];
  /** The watermark the next micro-batch uses. */
  readonly nextBatchWatermarkMs: number;
  /** Micro-batch mode: a batch planned (offsets written) but not committed, to run again as it was. */
  readonly redo: { readonly epoch: number; readonly ends: readonly (readonly number[])[] } | null;
  /** Each generated source's schedule origin, from the first run (null for memory sources). */
  readonly scheduleStarts: readonly (number | null)[];
}

/** Offsets of every source in plan order, as the logs write them. */
function toEntries(plan: AnalyzedPlan, offsets: readonly (readonly number[])[]): OffsetEntry['sources'] {
  return plan.sources.map((s) => {
    const o: SourceOffsets = {};
    for (const [p, v] of (offsets[s.index] ?? []).entries()) o[p] = v;
    return { key: String(s.index), offsets: o };
  });
}

function fromEntries(plan: AnalyzedPlan, entry: OffsetEntry): number[][] {
  return plan.sources.map((s) => {
    const found = entry.sources[s.index]?.offsets ?? {};
    return Array.from({ length: s.spec.partitions }, (_, p) => found[p] ?? 0);
  });
}

/**
 * The driver's side of a checkpoint directory: it holds the lock while the query runs, says where
 * a run resumes, and writes the offset and commit logs as epochs end. Epochs are committed in
 * order; an epoch is done when its commit file is durable.
 */
export class CheckpointManager {
  readonly layout: CheckpointLayout;
  private readonly logs: EpochLogs;

  private constructor(
    readonly location: string,
    private readonly plan: AnalyzedPlan,
    private readonly lock: CheckpointLock,
    readonly metadata: CheckpointMetadata,
  ) {
    this.layout = new CheckpointLayout(location);
    this.logs = new EpochLogs(this.layout);
  }

  /** Locks the checkpoint (creating it if new) and works out where this run starts. */
  static async open(
    location: string,
    plan: AnalyzedPlan,
    runId: string,
    newId: string,
  ): Promise<{ manager: CheckpointManager; recovery: RecoveryPoint }> {
    const layout = new CheckpointLayout(location);
    await mkdir(location, { recursive: true });
    const existing = await readMetadata(layout);
    const lock = await CheckpointLock.acquire(layout.lock, { queryId: existing?.id ?? newId, runId });
    try {
      const id = existing?.id ?? newId;
      if (existing !== undefined) checkCompatible(existing, plan, location);
      const metadata = existing ?? describePlan(plan, id, 'v1', []);
      if (existing === undefined) await writeMetadata(layout, metadata);
      const manager = new CheckpointManager(location, plan, lock, metadata);
      await manager.logs.init();
      return { manager, recovery: await manager.recover() };
    } catch (e) {
      await lock.release();
      throw e;
    }
  }

  private async recover(): Promise<RecoveryPoint> {
    const plan = this.plan;
    const commits = await this.logs.commitEpochs();
    const committed = commits.at(-1) ?? -1;
    const offsets = await this.logs.offsetEpochs();
    const planned = offsets.at(-1) ?? -1;
    const none = plan.sources.map((s) => new Array(s.spec.partitions).fill(0));
    let startOffsets: number[][] = none;
    let watermarks: number[] = plan.watermarks.map(() => Number.NEGATIVE_INFINITY);
    let nextBatchWatermarkMs = 0;
    if (committed >= 0) {
      const entry = await this.logs.readOffsets(committed);
      if (entry === undefined) {
        throw new MillraceError(
          ErrorCode.CHECKPOINT_CORRUPT,
          `checkpoint ${this.location}: epoch ${committed} is committed but its offsets file is missing`,
        );
      }
      startOffsets = fromEntries(plan, entry);
      const commit = await this.logs.readCommit(committed);
      watermarks = plan.watermarks.map((_, i) => commit?.watermarks?.[i] ?? Number.NEGATIVE_INFINITY);
      nextBatchWatermarkMs = commit?.nextBatchWatermarkMs ?? 0;
    }
    let redo: RecoveryPoint['redo'] = null;
    if (planned > committed) {
      const entry = await this.logs.readOffsets(planned);
      if (entry !== undefined) redo = { epoch: planned, ends: fromEntries(plan, entry) };
    }
    const scheduleStarts = await Promise.all(
      plan.sources.map(async (s) => {
        if (s.spec.kind === 'memory') return null;
        const bytes = await readCheckedIfExists(this.scheduleStartPath(s.index));
        return bytes === undefined
          ? null
          : (JSON.parse(bytes.toString()) as { startTimeMs: number }).startTimeMs;
      }),
    );
    return {
      queryId: this.metadata.id,
      committedEpoch: committed,
      nextEpoch: committed + 1,
      startOffsets,
      watermarks,
      nextBatchWatermarkMs,
      redo,
      scheduleStarts,
    };
  }

  private scheduleStartPath(sourceIndex: number): string {
    return join(this.layout.sourceDir(String(sourceIndex)), 'schedule');
  }

  /** Remembers a generated source's schedule origin so a restart replays the same rows. */
  async recordScheduleStart(sourceIndex: number, startTimeMs: number): Promise<void> {
    await mkdir(this.layout.sourceDir(String(sourceIndex)), { recursive: true });
    await writeFileAtomic(this.scheduleStartPath(sourceIndex), Buffer.from(JSON.stringify({ startTimeMs })));
  }

  /** Writes the offsets of an epoch (a micro-batch before it runs; a real-time epoch at its end). */
  async writeOffsets(
    epoch: number,
    offsets: readonly (readonly number[])[],
    meta: { batchWatermarkMs: number; batchTimestampMs: number },
  ): Promise<void> {
    await this.logs.writeOffsets(epoch, {
      format: 'v1',
      metadata: {
        batchWatermarkMs: Number.isFinite(meta.batchWatermarkMs) ? meta.batchWatermarkMs : 0,
        batchTimestampMs: meta.batchTimestampMs,
      },
      sources: toEntries(this.plan, offsets),
    });
  }

  /** Marks an epoch done, with the watermarks it reached. */
  async writeCommit(
    epoch: number,
    nextBatchWatermarkMs: number,
    watermarks: readonly number[],
  ): Promise<void> {
    await this.logs.writeCommit(epoch, {
      nextBatchWatermarkMs: Number.isFinite(nextBatchWatermarkMs) ? nextBatchWatermarkMs : 0,
      watermarks: watermarks.map((w) => (Number.isFinite(w) ? w : null)),
    });
  }

  /**
   * Removes what no retained epoch needs: log files of epochs older than the retention allows, and
   * state files older than the snapshot the oldest retained epoch restores from.
   */
  async purge(committedEpoch: number, retain: number): Promise<void> {
    const oldest = committedEpoch - retain + 1;
    if (oldest <= 0) return;
    await this.logs.purgeBefore(oldest);
    await purgeState(join(this.location, 'state'), oldest + 1);
  }

  async close(): Promise<void> {
    await this.lock.release();
  }
}

/**
 * In every `state/<operator>/<partition>`, removes the files older than the newest snapshot at or
 * below `version` (restoring `version` or later never reads them).
 */
async function purgeState(stateRoot: string, version: number): Promise<void> {
  const dirs = async (d: string) =>
    (await readdir(d).catch(() => [] as string[])).filter((n) => /^\d+$/.test(n));
  for (const op of await dirs(stateRoot)) {
    for (const part of await dirs(join(stateRoot, op))) {
      const dir = join(stateRoot, op, part);
      const { snapshots, changelogs } = listStateVersions(dir);
      const base = snapshots.filter((v) => v <= version).at(-1);
      if (base === undefined) continue;
      const old = [
        ...snapshots.filter((v) => v < base).map((v) => stateFileName(v, 'snapshot')),
        ...changelogs.filter((v) => v <= base).map((v) => stateFileName(v, 'changelog')),
      ];
      await Promise.all(old.map((f) => unlink(join(dir, f)).catch(() => {})));
    }
  }
}

/** Changes a checkpoint cannot survive; the full evolution rules (SPEC §6.4) extend this. */
function checkCompatible(stored: CheckpointMetadata, plan: AnalyzedPlan, location: string): void {
  const refuse = (change: string) =>
    new MillraceError(
      ErrorCode.CHECKPOINT_INCOMPATIBLE_CHANGE,
      `the query cannot resume from checkpoint ${location}: ${change}. Start it with a new checkpointLocation`,
    );
  if (stored.sources.length !== plan.sources.length) {
    throw refuse(`it had ${stored.sources.length} source(s), the query now has ${plan.sources.length}`);
  }
}
