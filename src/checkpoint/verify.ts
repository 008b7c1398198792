import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EpochLogs } from './epoch-logs.js';
import { readChecked } from './files.js';
import {
  type CheckpointProblem,
  corrupt,
  exists,
  Problems,
  type RestartPlan,
  readJsonFile,
  readLock,
  restartPlan,
  statefulOperators,
} from './inspect.js';
import { CheckpointLayout } from './layout.js';
import { readMetadata } from './metadata.js';
import { listStateVersions, readStateFile, restorePlan } from './state-files.js';

export interface CheckpointVerification {
  readonly location: string;
  readonly queryId: string | null;
  /** Files read and checked, by kind. */
  readonly checked: {
    readonly metadata: number;
    readonly offsets: number;
    readonly commits: number;
    readonly state: number;
    readonly sources: number;
    readonly lock: number;
  };
  readonly restart: RestartPlan;
  /** Stateful partitions whose restore chain was followed. */
  readonly restorablePartitions: number;
  readonly problems: readonly CheckpointProblem[];
}

/**
 * Checks every file of the checkpoint at `root` (checksum and format) and that a restart has what
 * it needs: an offsets file for every commit, and the whole restore chain of the last committed
 * epoch's state for every stateful partition.
 */
export async function verifyCheckpoint(root: string): Promise<CheckpointVerification> {
  const layout = new CheckpointLayout(root);
  const logs = new EpochLogs(layout);
  const problems = new Problems(root);
  const checked = { metadata: 0, offsets: 0, commits: 0, state: 0, sources: 0, lock: 0 };

  const metadata = await problems.attempt(layout.metadata, () => readMetadata(layout));
  checked.metadata++;

  const offsetEpochs = await logs.offsetEpochs();
  for (const epoch of offsetEpochs) {
    const path = layout.offsets(epoch);
    const entry = await problems.attempt(path, () => logs.readOffsets(epoch));
    checked.offsets++;
    if (entry !== undefined && metadata !== undefined && entry.format !== metadata.offsetLogFormat) {
      problems.add(
        path,
        `is corrupt: it is in format ${entry.format}, and the metadata says the offset log is ${metadata.offsetLogFormat}`,
      );
      continue;
    }
    if (
      entry?.format === 'v1' &&
      metadata !== undefined &&
      entry.sources.length !== metadata.sources.length
    ) {
      problems.add(
        path,
        `is incomplete: it lists ${entry.sources.length} source(s), the query has ${metadata.sources.length}`,
      );
    }
  }
  const commitEpochs = await logs.commitEpochs();
  for (const epoch of commitEpochs) {
    const path = layout.commit(epoch);
    const commit = await problems.attempt(path, () => logs.readCommit(epoch));
    checked.commits++;
    if (commit !== undefined && typeof commit?.nextBatchWatermarkMs !== 'number') {
      problems.add(path, 'is corrupt: it has no nextBatchWatermarkMs');
    }
  }
  // Offsets are written before (micro-batch) or with (real time) their commit, never after.
  const newestOffsets = offsetEpochs.at(-1) ?? -1;
  const hasOffsets = new Set(offsetEpochs);
  for (const epoch of commitEpochs) {
    if (hasOffsets.has(epoch)) continue;
    const newest = newestOffsets < 0 ? 'there is none' : `offsets/${newestOffsets}`;
    problems.add(
      layout.commit(epoch),
      epoch > newestOffsets
        ? `is newer than the newest offsets file (${newest}): an epoch commits only after its offsets are written`
        : `has no offsets/${epoch}: a committed epoch's offsets are where a restart resumes`,
    );
  }

  const restart = restartPlan(offsetEpochs, commitEpochs);
  let restorablePartitions = 0;
  for (const op of await statefulOperators(root, metadata)) {
    const schema = layout.stateSchema(op.operatorId);
    if (await exists(schema)) {
      await problems.attempt(schema, () => readChecked(schema));
      checked.state++;
    }
    for (const p of op.partitions) {
      const dir = layout.stateDir(op.operatorId, p);
      const { snapshots, changelogs } = listStateVersions(dir);
      const files = [
        ...snapshots.map((version) => ({ version, kind: 'snapshot' as const })),
        ...changelogs.map((version) => ({ version, kind: 'changelog' as const })),
      ];
      for (const f of files) {
        const path = layout.stateFile(op.operatorId, p, f.version, f.kind);
        await problems.attempt(path, () =>
          readStateFile(path, { kind: f.kind, version: f.version, operatorId: op.operatorId, partition: p }),
        );
        checked.state++;
      }
    }
    // Leftovers of an operator the metadata does not name are checked, not required (unless the
    // metadata itself is unreadable: then every operator found is taken as the query's).
    if (restart.restoreVersion === 0 || (op.kind === null && metadata !== undefined)) continue;
    const opDir = join(root, 'state', String(op.operatorId));
    if (op.partitions.length === 0) {
      problems.add(
        opDir,
        `is missing: operator ${op.operatorId} (${op.kind ?? 'stateful'}) is stateful and epoch ${restart.resumeAfter} is committed, so its state must be here`,
      );
      continue;
    }
    // Partitions are numbered from 0: a gap is a partition whose state is gone.
    for (let p = 0; p <= op.partitions.at(-1)!; p++) {
      if (!op.partitions.includes(p)) {
        problems.add(
          layout.stateDir(op.operatorId, p),
          `is missing: operator ${op.operatorId} has state for partition ${op.partitions.at(-1)}, so it must have state for partition ${p} too`,
        );
        continue;
      }
      let complete = true;
      for (const f of restorePlan(layout.stateDir(op.operatorId, p), restart.restoreVersion)) {
        if (await exists(f.path)) {
          complete &&= !problems.has(f.path);
          continue;
        }
        complete = false;
        problems.add(
          f.path,
          `is missing: a restart restores state version ${restart.restoreVersion} (the end of epoch ${restart.resumeAfter}) and needs it`,
        );
      }
      if (complete) restorablePartitions++;
    }
  }

  for (const id of await readdir(join(root, 'sources')).catch(() => [] as string[])) {
    const path = join(layout.sourceDir(id), 'schedule');
    if (!(await exists(path))) continue;
    await problems.attempt(path, async () => {
      if (typeof (await readJsonFile(path)).startTimeMs !== 'number')
        throw corrupt(path, 'it has no startTimeMs');
    });
    checked.sources++;
  }
  if (await exists(layout.lock)) {
    await problems.attempt(layout.lock, () => readLock(layout.lock));
    checked.lock++;
  }
  return {
    location: root,
    queryId: metadata?.id ?? null,
    checked,
    restart,
    restorablePartitions,
    problems: problems.list,
  };
}
