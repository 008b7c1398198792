import { readdir, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';
import { ErrorCode, MillraceError } from '../errors.js';
import { bootId, processRuns } from '../util/process-identity.js';
import { damageError } from './damage.js';
import { EpochLogs, type OffsetEntry, type SourceOffsets, type WatermarkHold } from './epoch-logs.js';
import { numberedEntries, readChecked } from './files.js';
import { CheckpointLayout } from './layout.js';
import { decodeLease, judgeLease, readBytes } from './lease-record.js';
import type { LockHolder, LockOwner } from './lock.js';
import { type CheckpointMetadata, readMetadata, type SourceRecord } from './metadata.js';
import {
  listStateVersions,
  readStateFile,
  restorePlan,
  type StateFileKind,
  StateKeyReplay,
} from './state-files.js';
import { metadataMissing, writtenData } from './written-data.js';

/**
 * Reading a checkpoint from the outside, for `millrace checkpoint inspect | verify`: what it holds,
 * what a restart would do with it (the rules of {@link CheckpointManager} and the state
 * checkpointer, restated here without taking the lock), and whether every file checks. Nothing
 * here writes; a damaged file becomes a {@link CheckpointProblem}, never an exception, so one
 * report names every problem.
 */

/** Something wrong with one file: `file` (relative to the checkpoint, `/`-separated) then `message`. */
export interface CheckpointProblem {
  readonly file: string;
  /** A clause that follows the file name: "is corrupt: …", "is missing: …". */
  readonly message: string;
}

/** The epochs one log holds. */
export interface EpochSpan {
  readonly count: number;
  readonly first: number | null;
  readonly last: number | null;
}

/** What a run started on this checkpoint would do (docs/operations.md, "Restart"). */
export interface RestartPlan {
  /** The last committed epoch; the run goes on after it (null: none, it starts from the beginning). */
  readonly resumeAfter: number | null;
  /** The first epoch the run writes. */
  readonly nextEpoch: number;
  /**
   * An epoch whose offsets were written but that did not commit (null: none). A restart redoes it
   * with exactly those offsets, or finishes its commit when they were written at its commit and
   * the sink committed it (CheckpointManager's recovery).
   */
  readonly redoEpoch: number | null;
  /** The state version restored: the state at the end of `resumeAfter` (0: empty state). */
  readonly restoreVersion: number;
}

export interface SourceOffsetsView {
  /** The offset log's key: the source's position (v1) or its name (v2). */
  readonly key: string;
  readonly index: number | null;
  readonly name: string | null;
  /** v2: the source was removed from the query since (its name is retired); absent otherwise. */
  readonly retired?: true;
  /** Partition → next offset to read. */
  readonly offsets: SourceOffsets;
}

/** What the last committed epoch read (its offsets file). */
export interface CommittedOffsets {
  readonly epoch: number;
  readonly batchWatermarkMs: number;
  readonly batchTimestampMs: number;
  readonly sources: readonly SourceOffsetsView[];
}

/** The watermarks the last committed epoch reached (its commit file); a restart goes on from them. */
export interface CommittedWatermarks {
  readonly epoch: number;
  /** The watermark the next micro-batch uses (0: none yet). */
  readonly nextBatchWatermarkMs: number;
  /** Each watermark input's value at the end of the epoch (null: none yet). */
  readonly inputs: readonly (number | null)[];
  /** Real-time mode: the source partitions that were behind and held the watermark back. */
  readonly heldBack: readonly WatermarkHoldView[];
}

/** A source partition that held the watermark back at the end of the committed epoch. */
export interface WatermarkHoldView extends WatermarkHold {
  /** The source's position and name by the metadata (null: not in it). */
  readonly index: number | null;
  readonly name: string | null;
}

export interface PartitionState {
  readonly partition: number;
  readonly snapshots: readonly number[];
  readonly changelogs: readonly number[];
  /** Bytes of every state file of the partition. */
  readonly bytes: number;
  /** What a restart reads: the newest snapshot at or below its version (null: none), then changelogs. */
  readonly restoreFrom: { readonly snapshot: number | null; readonly changelogs: readonly number[] };
  /** Keys the restored state holds (null: its files cannot be read; see the problems). */
  readonly keys: number | null;
}

export interface OperatorState {
  readonly operatorId: number;
  readonly kind: string;
  readonly partitions: readonly PartitionState[];
  readonly keys: number | null;
  readonly bytes: number;
}

export interface LockStatus {
  readonly owner: LockOwner;
  readonly sameHost: boolean;
  /**
   * On this host: whether the owner's process runs — its pid, started when the lock says, in this
   * boot (null: the owner is on another host).
   */
  readonly processAlive: boolean | null;
  /** On this host: whether the CLI supervising the owner runs (null: none, or another host). */
  readonly supervisorAlive: boolean | null;
  readonly heartbeatAgeMs: number;
  /** Whether a new run would be refused with CHECKPOINT_IN_USE (else it takes the lock over). */
  readonly held: boolean;
  /** The owner runs but its supervisor is gone: a new run waits for it to end, up to its lease period. */
  readonly dying: boolean;
  /** Why the owner counts as alive or gone, by the lease's rules. */
  readonly why: string;
}

export interface CheckpointInspection {
  readonly location: string;
  readonly queryId: string;
  readonly createdAt: number;
  readonly offsetLogFormat: 'v1' | 'v2';
  readonly sources: readonly SourceRecord[];
  readonly retiredSources: readonly string[];
  readonly sink: string;
  readonly offsetEpochs: EpochSpan;
  readonly commitEpochs: EpochSpan;
  readonly restart: RestartPlan;
  /** The last committed epoch's offsets (null: nothing committed, or unreadable). */
  readonly offsets: CommittedOffsets | null;
  /** The last committed epoch's watermarks (null: nothing committed, or unreadable). */
  readonly watermarks: CommittedWatermarks | null;
  readonly state: readonly OperatorState[];
  readonly lock: LockStatus | null;
  /** What could not be read (run verify for the whole list). */
  readonly problems: readonly CheckpointProblem[];
}

/**
 * Why `root` is not a checkpoint directory, or null when it is one: it has a metadata file, or it
 * lost it and still holds what a query wrote (a damaged checkpoint, which verify reports).
 */
export async function whyNotACheckpoint(root: string): Promise<string | null> {
  const info = await stat(root).catch(() => undefined);
  if (info === undefined) return `there is no directory ${root}`;
  if (!info.isDirectory()) return `${root} is not a directory`;
  const metadata = await stat(new CheckpointLayout(root).metadata).catch(() => undefined);
  if (metadata === undefined && (await writtenData(root)).length === 0) {
    return `${root} is not a checkpoint: it has no metadata file (a query writes one when it first starts there)`;
  }
  return null;
}

/**
 * Collects problems, naming files relative to the checkpoint (those outside it, a files sink's
 * manifests, by their absolute path).
 */
export class Problems {
  readonly list: CheckpointProblem[] = [];
  constructor(readonly root: string) {}

  name(path: string): string {
    const inside = relative(this.root, path);
    if (inside.startsWith('..') || isAbsolute(inside)) return path;
    return inside.split(sep).join('/');
  }

  add(path: string, message: string): void {
    this.list.push({ file: this.name(path), message });
  }

  has(path: string): boolean {
    const file = this.name(path);
    return this.list.some((p) => p.file === file);
  }

  /** Runs `read`; a failure becomes a problem of `path` and the result undefined. */
  async attempt<T>(path: string, read: () => T | Promise<T>): Promise<T | undefined> {
    try {
      return await read();
    } catch (e) {
      // A file listed a moment ago and gone now was purged by a running query: not a problem.
      if (!(await exists(path))) return undefined;
      this.add(path, clause(e, path));
      return undefined;
    }
  }
}

/** An error's message as a clause after the file name ("is corrupt: …"). */
function clause(e: unknown, path: string): string {
  const message = e instanceof Error ? e.message : String(e);
  const prefix = `checkpoint file ${path} `;
  if (message.startsWith(prefix)) return message.slice(prefix.length);
  return e instanceof MillraceError ? `is unusable: ${message}` : `cannot be read: ${message}`;
}

export async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

function span(epochs: readonly number[]): EpochSpan {
  return { count: epochs.length, first: epochs[0] ?? null, last: epochs.at(-1) ?? null };
}

/** CheckpointManager's recovery rules. */
export function restartPlan(offsetEpochs: readonly number[], commitEpochs: readonly number[]): RestartPlan {
  const committed = commitEpochs.at(-1) ?? -1;
  const planned = offsetEpochs.at(-1) ?? -1;
  return {
    resumeAfter: committed >= 0 ? committed : null,
    nextEpoch: committed + 1,
    redoEpoch: planned > committed ? planned : null,
    restoreVersion: committed + 1,
  };
}

/** Numbered entries of a directory; none when it cannot be listed (a report never throws). */
function numericEntries(dir: string): Promise<number[]> {
  return numberedEntries(dir).catch(() => []);
}

/** A stateful operator: named by the metadata (`kind`), or only found under state/ (kind null). */
interface StatefulDirs {
  readonly operatorId: number;
  readonly kind: string | null;
  /** The partition directories present, ascending. */
  readonly partitions: number[];
}

export async function statefulOperators(
  root: string,
  metadata: CheckpointMetadata | undefined,
): Promise<StatefulDirs[]> {
  const ids = new Map<number, string | null>();
  for (const s of metadata?.stateful ?? []) ids.set(s.operatorId, s.kind);
  for (const id of await numericEntries(join(root, 'state'))) {
    if (!ids.has(id)) ids.set(id, null);
  }
  return Promise.all(
    [...ids]
      .sort(([a], [b]) => a - b)
      .map(async ([operatorId, kind]) => ({
        operatorId,
        kind,
        partitions: await numericEntries(join(root, 'state', String(operatorId))),
      })),
  );
}

/**
 * Keys held after replaying `files` as a restore does (evictions and removals, then writes, file by file); null
 * when a file cannot be read (it becomes a problem).
 */
function replayKeys(
  files: readonly { path: string; version: number; kind: StateFileKind }[],
  operatorId: number,
  partition: number,
  problems: Problems,
): number | null {
  const keys = new StateKeyReplay();
  for (const f of files) {
    let content: ReturnType<typeof readStateFile>;
    try {
      content = readStateFile(f.path, { kind: f.kind, version: f.version, operatorId, partition });
    } catch (e) {
      problems.add(f.path, clause(e, f.path));
      return null;
    }
    keys.apply(content);
  }
  return keys.size;
}

async function partitionState(
  layout: CheckpointLayout,
  operatorId: number,
  partition: number,
  version: number,
  problems: Problems,
): Promise<PartitionState> {
  const dir = layout.stateDir(operatorId, partition);
  const { snapshots, changelogs } = listStateVersions(dir);
  let bytes = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (/^\d+\.(changelog|snapshot)$/.test(name))
      bytes += (await stat(join(dir, name)).catch(() => null))?.size ?? 0;
  }
  const files = version > 0 ? restorePlan(dir, version) : [];
  return {
    partition,
    snapshots,
    changelogs,
    bytes,
    restoreFrom: {
      snapshot: files.find((f) => f.kind === 'snapshot')?.version ?? null,
      changelogs: files.filter((f) => f.kind === 'changelog').map((f) => f.version),
    },
    keys: replayKeys(files, operatorId, partition, problems),
  };
}

/** The lock's owner and whether it still holds the checkpoint, by the lease's rules. */
function lockStatus(owner: LockOwner): LockStatus {
  const now = Date.now();
  const sameHost = owner.host === hostname();
  const verdict = judgeLease(owner, { host: hostname(), bootId: bootId(), now });
  const sameBoot = sameHost && (owner.bootId === null || bootId() === null || owner.bootId === bootId());
  const processAlive = sameHost
    ? sameBoot && processRuns({ pid: owner.pid, startTime: owner.pidStartTime })
    : null;
  const supervisorAlive = sameBoot && owner.supervisor !== null ? processRuns(owner.supervisor) : null;
  return {
    owner,
    sameHost,
    processAlive,
    supervisorAlive,
    heartbeatAgeMs: now - owner.heartbeatAt,
    held: verdict.live,
    dying: verdict.live && verdict.dying !== null,
    why: verdict.why,
  };
}

export function corrupt(path: string, why: string): MillraceError {
  return new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
}

/** A checked file holding one JSON object. */
export async function readJsonFile(path: string): Promise<Record<string, unknown>> {
  const text = (await readChecked(path)).toString();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw corrupt(path, (e as Error).message);
  }
  if (typeof value !== 'object' || value === null) throw corrupt(path, 'it holds no JSON object');
  return value as Record<string, unknown>;
}

/**
 * The owner a checkpoint's lock file names. Throws CHECKPOINT_CORRUPT naming the file when it does
 * not check or names no owner (pid, host, heartbeat).
 */
export async function readLock(path: string): Promise<LockOwner> {
  const bytes = await readBytes(path);
  if (bytes === undefined) throw new Error(`there is no lock file ${path}`);
  return decodeLease<LockHolder>(bytes, path);
}

/**
 * Names each source of an offset entry by the metadata: by position in v1, by name in v2, where a
 * name the query no longer has is a retired one (the entry was written before its removal).
 */
function describeOffsets(entry: OffsetEntry, metadata: CheckpointMetadata): SourceOffsetsView[] {
  return entry.sources.map((s) => {
    if (entry.format === 'v2' && (metadata.retiredSources ?? []).includes(s.key)) {
      return { key: s.key, index: null, name: s.key, retired: true, offsets: s.offsets };
    }
    const source = sourceByKey(entry.format, s.key, metadata);
    return { key: s.key, index: source?.index ?? null, name: source?.name ?? null, offsets: s.offsets };
  });
}

/** The source a log names by `key`: its position (v1) or its name (v2). */
function sourceByKey(
  format: 'v1' | 'v2',
  key: string,
  metadata: CheckpointMetadata,
): SourceRecord | undefined {
  return format === 'v1' ? metadata.sources[Number(key)] : metadata.sources.find((m) => m.name === key);
}

/**
 * What the checkpoint at `root` holds. Throws CHECKPOINT_CORRUPT when its metadata cannot be read;
 * anything else that cannot be read is listed in `problems`.
 */
export async function inspectCheckpoint(root: string): Promise<CheckpointInspection> {
  const layout = new CheckpointLayout(root);
  const logs = new EpochLogs(layout);
  const problems = new Problems(root);
  const metadata = await readMetadata(layout);
  if (metadata === undefined) {
    const found = await writtenData(root);
    if (found.length > 0) throw damageError(metadataMissing(layout, found));
    throw new MillraceError(
      ErrorCode.CHECKPOINT_CORRUPT,
      (await whyNotACheckpoint(root)) ?? `no metadata in ${root}`,
    );
  }
  const offsetEpochs = await logs.offsetEpochs();
  const commitEpochs = await logs.commitEpochs();
  const restart = restartPlan(offsetEpochs, commitEpochs);
  let offsets: CommittedOffsets | null = null;
  let watermarks: CommittedWatermarks | null = null;
  if (restart.resumeAfter !== null) {
    const epoch = restart.resumeAfter;
    if (!(await exists(layout.offsets(epoch)))) {
      problems.add(
        layout.offsets(epoch),
        `is missing: epoch ${epoch} is committed, and a restart resumes from its offsets`,
      );
    }
    const entry = await problems.attempt(layout.offsets(epoch), () => logs.readOffsets(epoch));
    if (entry !== undefined) {
      const { batchWatermarkMs, batchTimestampMs } = entry.metadata;
      offsets = { epoch, batchWatermarkMs, batchTimestampMs, sources: describeOffsets(entry, metadata) };
    }
    const commit = await problems.attempt(layout.commit(epoch), () => logs.readCommit(epoch));
    if (commit !== undefined) {
      const { nextBatchWatermarkMs, watermarks: inputs = [], watermarkHeldBack = [] } = commit;
      const heldBack = watermarkHeldBack.map((h) => {
        const source = sourceByKey(metadata.offsetLogFormat, h.source, metadata);
        return { ...h, index: source?.index ?? null, name: source?.name ?? null };
      });
      watermarks = { epoch, nextBatchWatermarkMs, inputs, heldBack };
    }
  }
  const state: OperatorState[] = [];
  for (const op of await statefulOperators(root, metadata)) {
    const partitions: PartitionState[] = [];
    for (const p of op.partitions) {
      partitions.push(await partitionState(layout, op.operatorId, p, restart.restoreVersion, problems));
    }
    state.push({
      operatorId: op.operatorId,
      kind: op.kind ?? 'unknown (not in the metadata)',
      partitions,
      keys: partitions.some((p) => p.keys === null) ? null : partitions.reduce((n, p) => n + p.keys!, 0),
      bytes: partitions.reduce((n, p) => n + p.bytes, 0),
    });
  }
  let lock: LockStatus | null = null;
  if (await exists(layout.lock)) {
    const owner = await problems.attempt(layout.lock, () => readLock(layout.lock));
    if (owner !== undefined) lock = lockStatus(owner);
  }
  return {
    location: root,
    queryId: metadata.id,
    createdAt: metadata.createdAt,
    offsetLogFormat: metadata.offsetLogFormat,
    sources: metadata.sources,
    retiredSources: metadata.retiredSources ?? [],
    sink: metadata.sink?.kind ?? 'unknown',
    offsetEpochs: span(offsetEpochs),
    commitEpochs: span(commitEpochs),
    restart,
    offsets,
    watermarks,
    state,
    lock,
    problems: problems.list,
  };
}
