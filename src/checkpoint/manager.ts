import { mkdir, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { sinkConnector, sourceConnector } from '../connectors/registry.js';
import { ErrorCode, MillraceError } from '../errors.js';
import { type AnalyzedPlan, checkSourceEvolution, type PlannedSource } from '../plan/analyze.js';
import type { PhysicalPlan } from '../plan/physical.js';
import { damageError, throwFirst } from './damage.js';
import {
  type CommitEntry,
  EpochLogs,
  type OffsetEntry,
  type SourceOffsets,
  type WatermarkHold,
} from './epoch-logs.js';
import { evolveCheckpoint } from './evolution.js';
import { readCheckedIfExists, writeFileAtomic } from './files.js';
import { CheckpointLayout, SCHEDULE_FILE } from './layout.js';
import type { LeaseTiming } from './lease.js';
import { ensureCheckpointLocation } from './location.js';
import { CheckpointLock } from './lock.js';
import { type CheckpointMetadata, describePlan, readMetadata, writeMetadata } from './metadata.js';
import { checkSourceFiles, type ResumedOffsets } from './source-files-check.js';
import { checkStateChains } from './state-check.js';
import { listStateVersions, stateFileName } from './state-files.js';
import { metadataMissing, writtenData } from './written-data.js';

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
  /** The watermark the committed micro-batch ran with: the next one judges late rows by it. */
  readonly lateWatermarkMs: number;
  /** Micro-batch mode: a batch planned (offsets written) but not committed, to run again as it was. */
  readonly redo: { readonly epoch: number; readonly ends: readonly (readonly number[])[] } | null;
  /** Each generated source's schedule origin, from the first run (null for memory sources). */
  readonly scheduleStarts: readonly (number | null)[];
  /**
   * For each stateful operator, by its id in this run's plan: the id its state is kept under in
   * the checkpoint (`state/<id>/`). They differ when operators were added or removed upstream of
   * it since the checkpoint was created (docs/operations.md).
   */
  readonly stateIds: Readonly<Record<number, number>>;
}

/** How the manager is opened: the run's query options that shape the checkpoint, and its plan. */
export interface OpenOptions {
  /** Offsets by source name (offset log v2); see `QueryOptions.sourceEvolution`. */
  readonly sourceEvolution?: boolean;
  /** The run's physical plan: the checkpoint records its stateful operators' state partitions. */
  readonly physical?: PhysicalPlan;
  /** The lock's lease period and renewal interval (defaults: 10 s, every 3 s). */
  readonly lease?: LeaseTiming;
  /** The group task whose checkpoint this is (docs/scale-out.md), or null for a query run whole. */
  readonly task?: string | null;
}

/**
 * The driver's side of a checkpoint directory: it holds the lock while the query runs, says where
 * a run resumes, and writes the offset and commit logs as epochs end. Epochs are committed in
 * order; an epoch is done when its commit file is durable.
 */
export class CheckpointManager {
  readonly layout: CheckpointLayout;
  private readonly logs: EpochLogs;
  /** Bytes of offset and commit log files this run wrote (the driver's share of the checkpoint). */
  logBytesWritten = 0;
  /** The epoch recovery found committed by the sink and not logged: its commit file, to write. */
  private finishing: { epoch: number; entry: CommitEntry } | null = null;

  private constructor(
    readonly location: string,
    private readonly plan: AnalyzedPlan,
    private readonly lock: CheckpointLock,
    readonly metadata: CheckpointMetadata,
    private readonly stateIds: Readonly<Record<number, number>>,
    private readonly task: string | null,
    /** The sink's partitions: the last stage's tasks (1 when the plan was not given). */
    private readonly sinkPartitions: number,
  ) {
    this.layout = new CheckpointLayout(location);
    this.logs = new EpochLogs(this.layout);
  }

  /**
   * Locks the checkpoint (creating it if new) and works out where this run starts. On an existing
   * checkpoint the query's changes since it was written are checked first (docs/operations.md, "What may change between runs"): a change it
   * cannot follow fails with `CHECKPOINT_INCOMPATIBLE_CHANGE` before any offset or state is read,
   * and leaves the checkpoint as it was. Then what the restart reads is checked: damage fails with
   * `CHECKPOINT_CORRUPT` naming the file, and leaves the checkpoint as it was too — as does a
   * directory without metadata that holds what a query wrote. An allowed change that alters what
   * the metadata records (a source added or removed in v2, a new plan fingerprint, a files sink's
   * directory an older version did not record) then rewrites it, atomically, before anything else
   * is written.
   */
  static async open(
    location: string,
    plan: AnalyzedPlan,
    runId: string,
    newId: string,
    options: OpenOptions = {},
  ): Promise<{ manager: CheckpointManager; recovery: RecoveryPoint }> {
    const sourceEvolution = options.sourceEvolution ?? false;
    checkSourceEvolution(plan, { sourceEvolution });
    const layout = new CheckpointLayout(location);
    await ensureCheckpointLocation(location);
    const existing = await readMetadata(layout);
    if (existing === undefined) await refuseDataWithoutMetadata(layout);
    const lock = await CheckpointLock.acquire(
      layout.lock,
      { queryId: existing?.id ?? newId, runId },
      { periodMs: options.lease?.periodMs, renewMs: options.lease?.renewMs },
    );
    try {
      const next = describePlan(plan, {
        id: existing?.id ?? newId,
        format: sourceEvolution ? 'v2' : 'v1',
        retired: [],
        physical: options.physical,
      });
      let metadata = next;
      let stateIds: Readonly<Record<number, number>> = {};
      let changed = true;
      if (existing !== undefined) {
        const evolution = evolveCheckpoint(existing, next, location);
        ({ metadata, stateIds, changed } = evolution);
      }
      const physical = options.physical;
      const sinkPartitions =
        physical === undefined ? 1 : (physical.stages[physical.sinkStage]?.partitions ?? 1);
      const manager = new CheckpointManager(
        location,
        plan,
        lock,
        metadata,
        stateIds,
        options.task ?? null,
        sinkPartitions,
      );
      // What the driver reads of the checkpoint is read and checked before anything is written: a
      // damaged checkpoint is left as it was.
      const recovery = await manager.recover(existing !== undefined);
      if (changed) await writeMetadata(layout, metadata);
      await manager.logs.init();
      const finishing = manager.finishing;
      if (finishing !== null) await manager.logs.writeCommit(finishing.epoch, finishing.entry);
      return { manager, recovery };
    } catch (e) {
      await lock.release();
      throw e;
    }
  }

  /**
   * Calls `listener` once, with CHECKPOINT_IN_USE naming the new owner, if another run is found to
   * have taken the checkpoint over from this one (at once if it already was): the run must stop.
   */
  onLost(listener: (error: MillraceError) => void): void {
    this.lock.onLost(listener);
  }

  /** A source's key in the offset log and under `sources/`: its position (v1) or its name (v2). */
  private sourceKey(source: PlannedSource): string {
    return this.metadata.offsetLogFormat === 'v2' ? source.spec.name! : String(source.index);
  }

  /** Offsets of every source in plan order, as the logs write them. */
  private toEntries(offsets: readonly (readonly number[])[]): OffsetEntry['sources'] {
    return this.plan.sources.map((s) => {
      const o: SourceOffsets = {};
      for (const [p, v] of (offsets[s.index] ?? []).entries()) o[p] = v;
      return { key: this.sourceKey(s), offsets: o };
    });
  }

  /**
   * Each source's offsets in an entry, in this plan's order. A source the entry does not list (one
   * added since, in v2) starts at offset 0; what the entry lists of sources the plan no longer has
   * (removed, in v2) is left behind.
   */
  private fromEntries(epoch: number, entry: OffsetEntry): number[][] {
    if (entry.format !== this.metadata.offsetLogFormat) {
      throw new MillraceError(
        ErrorCode.CHECKPOINT_CORRUPT,
        `checkpoint file ${this.layout.offsets(epoch)} is corrupt: it is in format ${entry.format}, ` +
          `and the checkpoint's metadata says its offset log is ${this.metadata.offsetLogFormat}`,
      );
    }
    const byKey = new Map(entry.sources.map((s) => [s.key, s.offsets]));
    return this.plan.sources.map((s) => {
      const found = byKey.get(this.sourceKey(s)) ?? {};
      return Array.from({ length: s.spec.partitions }, (_, p) => found[p] ?? 0);
    });
  }

  /**
   * Works out where the run starts, reading and checking what it needs: the last commit and its
   * offsets (or an epoch the sink committed after them, to finish), a planned batch's offsets,
   * the sources' own files, that every state partition has the files its restore reads (the
   * workers read them), and — on a checkpoint that existed before this run (`resumed`) — a files
   * sink's manifests. Writes nothing: `open` writes the commit file of an epoch to finish.
   */
  private async recover(resumed: boolean): Promise<RecoveryPoint> {
    const plan = this.plan;
    const commits = await this.logs.commitEpochs();
    const lastCommit = commits.at(-1) ?? -1;
    const offsets = await this.logs.offsetEpochs();
    const planned = offsets.at(-1) ?? -1;
    const sink = plan.definition.sink;
    const output = sinkConnector(sink);
    if (resumed && output.checkOutput !== undefined) {
      const record = output.record?.(sink) ?? {};
      throwFirst((await output.checkOutput(record, lastCommit, (e) => offsets.includes(e))).damage);
    }
    let plannedEntry = planned > lastCommit ? await this.logs.readOffsets(planned) : undefined;
    // An epoch written at its commit that the sink committed too (the run died before the commit
    // file) is finished, not redone: the sink holds its output, its state is durable (the sink
    // commits only after), and a redo could close windows at other points than that output did.
    const finished = plannedEntry?.metadata.commit;
    const rollForward =
      finished !== undefined &&
      (await output.hasCommitted?.(sink, planned, {
        queryId: this.metadata.id,
        task: this.task,
        partitions: this.sinkPartitions,
      })) === true;
    const committed = rollForward ? planned : lastCommit;
    const none = plan.sources.map((s) => new Array(s.spec.partitions).fill(0));
    let startOffsets: number[][] = none;
    let watermarks: number[] = plan.watermarks.map(() => Number.NEGATIVE_INFINITY);
    let nextBatchWatermarkMs = 0;
    let lateWatermarkMs = Number.NEGATIVE_INFINITY;
    let committedEntry: ResumedOffsets | undefined;
    if (committed >= 0) {
      const entry = rollForward ? plannedEntry : await this.logs.readOffsets(committed);
      if (entry === undefined) {
        throw new MillraceError(
          ErrorCode.CHECKPOINT_CORRUPT,
          `checkpoint file ${this.layout.offsets(committed)} is missing: epoch ${committed} is committed, ` +
            'and a restart resumes from its offsets',
        );
      }
      startOffsets = this.fromEntries(committed, entry);
      committedEntry = { epoch: committed, entry };
      const commit = rollForward ? finished : await this.logs.readCommit(committed);
      watermarks = plan.watermarks.map((_, i) => commit?.watermarks?.[i] ?? Number.NEGATIVE_INFINITY);
      nextBatchWatermarkMs = commit?.nextBatchWatermarkMs ?? 0;
      lateWatermarkMs = entry.metadata.batchWatermarkMs;
    }
    if (rollForward) {
      this.finishing = { epoch: committed, entry: finished! };
      plannedEntry = undefined;
    }
    let redo: RecoveryPoint['redo'] = null;
    const read: ResumedOffsets[] = committedEntry === undefined ? [] : [committedEntry];
    if (plannedEntry !== undefined) {
      redo = { epoch: planned, ends: this.fromEntries(planned, plannedEntry) };
      read.push({ epoch: planned, entry: plannedEntry });
    }
    throwFirst((await checkSourceFiles(this.layout, this.metadata, read)).damage);
    throwFirst(checkStateChains(this.layout, this.metadata.stateful, committed + 1));
    const scheduleStarts = await Promise.all(
      plan.sources.map(async (s) => {
        if (sourceConnector(s.spec).generated === undefined) return null;
        const bytes = await readCheckedIfExists(this.scheduleStartPath(s.index));
        // A source added since (v2) has none yet: it starts its schedule with this run.
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
      lateWatermarkMs,
      redo,
      scheduleStarts,
      stateIds: this.stateIds,
    };
  }

  /**
   * The directory of a source's own checkpoint files (`sources/<index>/` in v1, `sources/<name>/`
   * in v2, so they follow the source when sources are reordered).
   */
  sourceDir(sourceIndex: number): string {
    const source = this.plan.sources[sourceIndex];
    if (source === undefined) throw new Error(`internal: the plan has no source ${sourceIndex}`);
    return this.layout.sourceDir(this.sourceKey(source));
  }

  private scheduleStartPath(sourceIndex: number): string {
    return join(this.sourceDir(sourceIndex), SCHEDULE_FILE);
  }

  /** Remembers a generated source's schedule origin so a restart replays the same rows. */
  async recordScheduleStart(sourceIndex: number, startTimeMs: number): Promise<void> {
    await mkdir(this.sourceDir(sourceIndex), { recursive: true });
    await writeFileAtomic(this.scheduleStartPath(sourceIndex), Buffer.from(JSON.stringify({ startTimeMs })));
  }

  /** Writes the offsets of an epoch (a micro-batch before it runs; a real-time epoch at its end). */
  async writeOffsets(
    epoch: number,
    offsets: readonly (readonly number[])[],
    meta: {
      batchWatermarkMs: number;
      batchTimestampMs: number;
      /** Written at the epoch's commit: the watermarks its commit file records (see OffsetEntry). */
      watermarks?: readonly number[];
    },
  ): Promise<number> {
    // Only the lock's holder writes the logs: a run that lost the checkpoint (its heartbeat may
    // not have noticed yet) writes nothing more; the check costs one small read an epoch.
    await this.lock.confirm();
    const batchWatermarkMs = Number.isFinite(meta.batchWatermarkMs) ? meta.batchWatermarkMs : 0;
    return this.counted(
      this.logs.writeOffsets(epoch, {
        format: this.metadata.offsetLogFormat,
        metadata: {
          batchWatermarkMs,
          batchTimestampMs: meta.batchTimestampMs,
          ...(meta.watermarks === undefined
            ? {}
            : { commit: commitEntry(batchWatermarkMs, meta.watermarks) }),
        },
        sources: this.toEntries(offsets),
      }),
    );
  }

  /**
   * Marks an epoch done, with the watermarks it reached and, by source index, the partition that
   * held the watermark back (null: none).
   */
  async writeCommit(
    epoch: number,
    nextBatchWatermarkMs: number,
    watermarks: readonly number[],
    heldBack: readonly (Omit<WatermarkHold, 'source'> | null)[] = [],
  ): Promise<number> {
    await this.lock.confirm();
    const holds: WatermarkHold[] = [];
    for (const s of this.plan.sources) {
      const hold = heldBack[s.index];
      if (hold != null) holds.push({ source: this.sourceKey(s), ...hold });
    }
    const entry = commitEntry(nextBatchWatermarkMs, watermarks);
    return this.counted(
      this.logs.writeCommit(epoch, holds.length === 0 ? entry : { ...entry, watermarkHeldBack: holds }),
    );
  }

  private async counted(written: Promise<number>): Promise<number> {
    const bytes = await written;
    this.logBytesWritten += bytes;
    return bytes;
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

/** What an epoch's commit file records (a watermark not reached yet: null, or 0 for the next batch's). */
function commitEntry(nextBatchWatermarkMs: number, watermarks: readonly number[]): CommitEntry {
  return {
    nextBatchWatermarkMs: Number.isFinite(nextBatchWatermarkMs) ? nextBatchWatermarkMs : 0,
    watermarks: watermarks.map((w) => (Number.isFinite(w) ? w : null)),
  };
}

/**
 * A checkpoint without metadata is fresh only if no query wrote anything into it yet: one that holds
 * offsets, commits, state or source files lost its metadata, and is refused (CHECKPOINT_CORRUPT)
 * before the run writes anything — a new query id, a plan never compared with the state.
 */
async function refuseDataWithoutMetadata(layout: CheckpointLayout): Promise<void> {
  const found = await writtenData(layout.root);
  if (found.length > 0) throw damageError(metadataMissing(layout, found));
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
