import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { recordedSink } from '../connectors/registry.js';
import type { Damage } from './damage.js';
import { EpochLogs, type OffsetEntry } from './epoch-logs.js';
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
import { CheckpointLayout, SCHEDULE_FILE } from './layout.js';
import { type CheckpointMetadata, readMetadata } from './metadata.js';
import { checkSourceFiles, type ResumedOffsets, sourceKey } from './source-files-check.js';
import { checkStateChains } from './state-check.js';
import { listStateVersions, readStateFile, restorePlan } from './state-files.js';
import { metadataMissing, writtenData } from './written-data.js';

export interface CheckpointVerification {
  readonly location: string;
  readonly queryId: string | null;
  /** Files read and checked, by kind. */
  readonly checked: {
    readonly metadata: number;
    readonly offsets: number;
    readonly commits: number;
    readonly state: number;
    /** The sources' own files: a files source's log entries, a generated source's schedule. */
    readonly sources: number;
    /** A files sink's manifests, in its output directory. */
    readonly manifests: number;
    readonly lock: number;
  };
  readonly restart: RestartPlan;
  /** Stateful partitions whose restore chain was followed. */
  readonly restorablePartitions: number;
  /** What makes a restart refuse the checkpoint (CHECKPOINT_CORRUPT), or lose data. */
  readonly problems: readonly CheckpointProblem[];
  /**
   * What is wrong and harmless: a damaged file no restart reads (an old epoch's log, a state file
   * outside the restore chain), or one a run takes over (an unreadable lock).
   */
  readonly notes: readonly CheckpointProblem[];
}

type Checked = { -readonly [K in keyof CheckpointVerification['checked']]: number };

/** What a note adds to the damage of a file no restart reads. */
const UNREAD = 'no restart reads it, so it does no harm';

/**
 * Checks every file of the checkpoint at `root` (checksum and format), and that a restart has
 * everything it needs: the metadata, the last commit and its offsets (and a planned batch's), the
 * whole restore chain of every stateful partition, the sources' own files, and a files sink's
 * manifests. What a restart needs and cannot use is a problem — exactly what makes a run refuse
 * the checkpoint, as the checks are the run's own; other damage is a note.
 */
export async function verifyCheckpoint(root: string): Promise<CheckpointVerification> {
  const layout = new CheckpointLayout(root);
  const problems = new Problems(root);
  const notes = new Problems(root);
  const checked: Checked = {
    metadata: 0,
    offsets: 0,
    commits: 0,
    state: 0,
    sources: 0,
    manifests: 0,
    lock: 0,
  };

  const metadata = await problems.attempt(layout.metadata, () => readMetadata(layout));
  checked.metadata++;
  if (metadata === undefined && !problems.has(layout.metadata)) {
    const found = await writtenData(root);
    if (found.length > 0) problems.add(layout.metadata, metadataMissing(layout, found).clause);
  }
  const logs = await verifyLogs(layout, metadata, problems, notes, checked);
  const restorablePartitions = await verifyState(layout, metadata, logs.restart, problems, notes, checked);
  await verifySources(layout, metadata, logs.resumed, problems, notes, checked);

  const sink = metadata?.sink;
  const output = sink === undefined ? undefined : recordedSink(sink.kind);
  if (sink !== undefined && output?.checkOutput !== undefined) {
    // Asked of the disk, not of the listing above: on a running query an epoch's offsets may have
    // been written since, just before its manifest.
    const hasOffsets = (epoch: number) => existsSync(layout.offsets(epoch));
    const found = await output.checkOutput(sink, logs.restart.resumeAfter ?? -1, hasOffsets);
    addAll(problems, found.damage);
    checked.manifests = found.checked;
    if (found.note !== undefined) notes.add(layout.metadata, found.note);
  }
  if (await exists(layout.lock)) {
    // A lock that cannot be read names no live owner: the next run takes it over as stale.
    await unread(
      notes,
      layout.lock,
      () => readLock(layout.lock),
      'the next run takes an unreadable lock over',
    );
    checked.lock++;
  }
  return {
    location: root,
    queryId: metadata?.id ?? null,
    checked,
    restart: logs.restart,
    restorablePartitions,
    problems: problems.list,
    notes: notes.list,
  };
}

/** Adds each damage as a problem; paths in its clause are named as the problems name files. */
function addAll(problems: Problems, damage: readonly Damage[]): void {
  for (const d of damage) problems.add(d.path, d.clause.replaceAll(`${problems.root}${sep}`, ''));
}

/**
 * Runs `read`; a failure becomes a note of `path` (and the result undefined), its message ending
 * with why it does no harm (by default: no restart reads the file).
 */
async function unread<T>(
  notes: Problems,
  path: string,
  read: () => T | Promise<T>,
  why = UNREAD,
): Promise<T | undefined> {
  const before = notes.list.length;
  const value = await notes.attempt(path, read);
  for (let i = before; i < notes.list.length; i++) {
    const note = notes.list[i]!;
    notes.list[i] = { ...note, message: `${note.message}; ${why}` };
  }
  return value;
}

/**
 * The offset and commit logs. A restart reads the last commit, its offsets, and a planned batch's
 * offsets: their damage is a problem; that of older epochs' files is a note.
 */
async function verifyLogs(
  layout: CheckpointLayout,
  metadata: CheckpointMetadata | undefined,
  problems: Problems,
  notes: Problems,
  checked: Checked,
): Promise<{ restart: RestartPlan; resumed: ResumedOffsets[] }> {
  const logs = new EpochLogs(layout);
  const offsetEpochs = await logs.offsetEpochs();
  const commitEpochs = await logs.commitEpochs();
  const restart = restartPlan(offsetEpochs, commitEpochs);
  const read = new Set([restart.resumeAfter, restart.redoEpoch]);
  const resumed: ResumedOffsets[] = [];
  for (const epoch of offsetEpochs) {
    const path = layout.offsets(epoch);
    const needed = read.has(epoch);
    const target = needed ? problems : notes;
    const entry: OffsetEntry | undefined = needed
      ? await problems.attempt(path, () => logs.readOffsets(epoch))
      : await unread(notes, path, () => logs.readOffsets(epoch));
    checked.offsets++;
    if (entry === undefined || metadata === undefined) continue;
    const suffix = needed ? '' : `; ${UNREAD}`;
    if (entry.format !== metadata.offsetLogFormat) {
      target.add(
        path,
        `is corrupt: it is in format ${entry.format}, and the metadata says the offset log is ${metadata.offsetLogFormat}${suffix}`,
      );
    } else if (entry.format === 'v1' && entry.sources.length !== metadata.sources.length) {
      target.add(
        path,
        `is incomplete: it lists ${entry.sources.length} source(s), the query has ${metadata.sources.length}${suffix}`,
      );
    } else if (needed) {
      resumed.push({ epoch, entry });
    }
  }
  for (const epoch of commitEpochs) {
    const path = layout.commit(epoch);
    const needed = epoch === restart.resumeAfter;
    const commit = needed
      ? await problems.attempt(path, () => logs.readCommit(epoch))
      : await unread(notes, path, () => logs.readCommit(epoch));
    checked.commits++;
    if (commit !== undefined && typeof commit?.nextBatchWatermarkMs !== 'number') {
      (needed ? problems : notes).add(
        path,
        `is corrupt: it has no nextBatchWatermarkMs${needed ? '' : `; ${UNREAD}`}`,
      );
    }
  }
  // Offsets are written before (micro-batch) or with (real time) their commit, never after; a purge
  // interrupted between the two logs leaves older commits without their offsets.
  const hasOffsets = new Set(offsetEpochs);
  for (const epoch of commitEpochs) {
    if (hasOffsets.has(epoch)) continue;
    if (epoch === restart.resumeAfter) {
      problems.add(
        layout.offsets(epoch),
        `is missing: epoch ${epoch} is committed, and a restart resumes from its offsets`,
      );
    } else {
      notes.add(
        layout.commit(epoch),
        `has no offsets/${epoch}: ${UNREAD} (a restart resumes after epoch ${restart.resumeAfter})`,
      );
    }
  }
  return { restart, resumed };
}

/**
 * Every state file, and every stateful partition's restore chain (the run's own check): a damaged
 * or missing file of a chain is a problem, a damaged file outside it (kept for retention) or of an
 * operator the metadata does not name a note. Returns how many partitions can be restored.
 */
async function verifyState(
  layout: CheckpointLayout,
  metadata: CheckpointMetadata | undefined,
  restart: RestartPlan,
  problems: Problems,
  notes: Problems,
  checked: Checked,
): Promise<number> {
  const version = restart.restoreVersion;
  // Without metadata nothing says which operators are the query's: each one found counts.
  const operators = await statefulOperators(layout.root, metadata);
  const restored = operators.filter((op) => op.kind !== null || metadata === undefined);
  const chains = new Set<string>();
  for (const op of restored) {
    for (const p of op.partitions) {
      if (version > 0)
        for (const f of restorePlan(layout.stateDir(op.operatorId, p), version)) chains.add(f.path);
    }
  }
  for (const op of operators) {
    const schema = layout.stateSchema(op.operatorId);
    if (await exists(schema)) {
      await unread(notes, schema, () => readChecked(schema));
      checked.state++;
    }
    for (const p of op.partitions) {
      const { snapshots, changelogs } = listStateVersions(layout.stateDir(op.operatorId, p));
      const files = [
        ...snapshots.map((v) => ({ version: v, kind: 'snapshot' as const })),
        ...changelogs.map((v) => ({ version: v, kind: 'changelog' as const })),
      ];
      for (const f of files) {
        const path = layout.stateFile(op.operatorId, p, f.version, f.kind);
        const expect = { kind: f.kind, version: f.version, operatorId: op.operatorId, partition: p };
        if (chains.has(path)) await problems.attempt(path, () => readStateFile(path, expect));
        else await unread(notes, path, () => readStateFile(path, expect));
        checked.state++;
      }
    }
  }
  const records = metadata?.stateful ?? restored.map((op) => ({ operatorId: op.operatorId, kind: null }));
  const missing = checkStateChains(layout, records, version);
  addAll(problems, missing);
  if (version === 0) return 0;
  let restorable = 0;
  for (const op of restored) {
    for (const p of op.partitions) {
      const chain = restorePlan(layout.stateDir(op.operatorId, p), version);
      if (chain.every((f) => !problems.has(f.path))) restorable++;
    }
  }
  return restorable;
}

/**
 * The sources' own files: what a restart needs of the query's sources (the run's own check), and
 * the schedules of sources the metadata does not name (leftovers, retired sources), which no
 * restart reads.
 */
async function verifySources(
  layout: CheckpointLayout,
  metadata: CheckpointMetadata | undefined,
  resumed: readonly ResumedOffsets[],
  problems: Problems,
  notes: Problems,
  checked: Checked,
): Promise<void> {
  const known = new Set<string>();
  if (metadata !== undefined) {
    const sources = await checkSourceFiles(layout, metadata, resumed);
    addAll(problems, sources.damage);
    checked.sources += sources.files;
    for (const s of metadata.sources) known.add(sourceKey(metadata, s));
  }
  for (const id of await readdir(join(layout.root, 'sources')).catch(() => [] as string[])) {
    const path = join(layout.sourceDir(id), SCHEDULE_FILE);
    if (known.has(id) || !(await exists(path))) continue;
    // Without metadata nothing says which sources are the query's: each one found counts.
    const read = async () => {
      if (typeof (await readJsonFile(path)).startTimeMs !== 'number')
        throw corrupt(path, 'it has no startTimeMs');
    };
    if (metadata === undefined) await problems.attempt(path, read);
    else await unread(notes, path, read);
    checked.sources++;
  }
}
