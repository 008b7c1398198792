import { randomUUID } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readStateFile, restorePlan, type StateFileKind, StateKeyReplay } from '../checkpoint/state-files.js';
import { ErrorCode, MillraceError } from '../errors.js';
import type { StreamingQueryProgress } from '../metrics/progress.js';
import { startQuery } from '../runtime/driver/start-query.js';
import { listenFirstRow, sharedNow } from './first-row-probe.js';
import { BACKLOG_LIMIT_SECONDS } from './sustainability.js';

/**
 * C1 of `millrace bench checkpoint`: the checkpointed query, stopped, starts again on its
 * checkpoint, and the benchmark times what a restart costs.
 *
 * `startQuery()` resolves once every worker has built its tasks, and a stateful task restores its
 * state in its constructor (task.ts: `StateCheckpointer.restore`, then the operator rebuilds its
 * window index), before the worker says it is ready: so the time to `startQuery()` resolving
 * includes reading and decoding the state. The first row emitted at a sink after that is the
 * query running again; the sink thread stamps it (first-row-probe.ts).
 */

export interface RestartStats {
  /** The last epoch the stopped run committed: the restart goes on after it. */
  resumedAfterEpoch: number | null;
  /** The state version the restart restored (`resumedAfterEpoch + 1`). */
  restoredVersion: number | null;
  /** State files the restore read (newest snapshot at or below the version, then changelogs), all partitions. */
  restoreFiles: number;
  restoreBytes: number;
  /** The snapshot versions the restore started from (one per partition; 0: none). */
  snapshotVersions: number[];
  /** Keys the restored state holds, counted from the same files after the run (null: not readable). */
  restoredKeys: number | null;
  /** From the stopped run's `stop()` resolving to the new `startQuery()` call (ms). */
  downtimeMs: number | null;
  /** `startQuery()` called → resolved: workers started, state restored (ms). */
  startMs: number;
  /** `startQuery()` called → the first row emitted at a sink (ms); null: none within the run. */
  firstRowMs: number | null;
  /** `startQuery()` called → the new run's first committed epoch (ms); null: none within the run. */
  firstCommitMs: number | null;
  /**
   * `startQuery()` called → the first progress report in which the source had read all but
   * 50 ms' worth of the rows due (ms; reports come once a second). A restarted generator owes the
   * rows due while the query was down and produces them as fast as the query takes them.
   */
  caughtUpMs: number | null;
  /**
   * `startQuery()` called → the first progress report (once a second) in which every key group of
   * the restored state was loaded (a real-time restore loads lazily, see
   * InMemoryStateStore.restoreGroups); null: not within the run.
   */
  stateLoadedMs: number | null;
  /** Rows due but not read by the source at the first progress report of the new run. */
  backlogAtFirstReport: number | null;
  /** Groups held at the first progress report (restored, plus new, minus evicted). */
  firstReportRows: number | null;
  /** How long the restarted query ran (ms), its stop included. */
  ranMs: number;
  /** How long its `stop()` took (ms). */
  stopMs: number;
  /** Why its stop failed (a timeout: it had not caught up); null when it did not. */
  stopError: string | null;
}

export interface RestartPlan {
  url: URL;
  /** The job's parameters, the same as the stopped run's (the rate included). */
  params: Record<string, string | number>;
  location: string;
  rate: number;
  /** The restarted query runs until it emitted, committed and caught up, or this long at most. */
  runForMs: number;
  /** When the stopped run's `stop()` resolved ({@link sharedNow}), for the downtime. */
  stoppedAt: number;
  signal: AbortSignal;
}

interface RestoreFile {
  path: string;
  kind: StateFileKind;
  version: number;
  operator: number;
  partition: number;
}

/**
 * How long the restarted query's stop may take. It has nothing left to measure: a query that has
 * not caught up would drain its backlog first, and its checkpoint is thrown away.
 */
const RESTARTED_STOP_TIMEOUT_MS = 10_000;

const sum = (offsets: Record<string, number>): number => Object.values(offsets).reduce((a, b) => a + b, 0);

/** Restarts the query on its checkpoint and times it (see the module's comment). */
export async function measureRestart(plan: RestartPlan): Promise<RestartStats> {
  plan.signal.throwIfAborted();
  const resumedAfterEpoch = await lastCommit(plan.location);
  const restoredVersion = resumedAfterEpoch === null ? null : resumedAfterEpoch + 1;
  // Only names and sizes before the start: the restart should not wait for the benchmark.
  const files = restoredVersion === null ? [] : await restoreFiles(plan.location, restoredVersion);
  let restoreBytes = 0;
  for (const f of files) restoreBytes += (await stat(f.path)).size;

  const channel = `millrace-bench-first-row-${randomUUID()}`;
  const probe = listenFirstRow(channel);
  let firstCommitAt = Number.NaN;
  let caughtUpAt = Number.NaN;
  let loadedAt = Number.NaN;
  let firstReport: StreamingQueryProgress | null = null;
  const limit = plan.rate * BACKLOG_LIMIT_SECONDS;
  const onCommit = () => {
    if (Number.isNaN(firstCommitAt)) firstCommitAt = sharedNow();
  };
  const onProgress = (p: StreamingQueryProgress) => {
    firstReport ??= p;
    if (Number.isNaN(loadedAt) && p.stateOperators.every((o) => o.customMetrics.keyGroupsToLoad === 0))
      loadedAt = sharedNow();
    const s = p.sources[0];
    if (s === undefined || !Number.isNaN(caughtUpAt)) return;
    if (sum(s.latestOffset ?? s.endOffset) - sum(s.endOffset) <= limit) caughtUpAt = sharedNow();
  };
  let firstRowAt = Number.NaN;
  void probe.first().then(() => {
    firstRowAt = probe.earliest();
  });
  try {
    const t0 = sharedNow();
    const q = await startQuery(plan.url, {
      params: { ...plan.params, firstRowChannel: channel },
      checkpointLocation: plan.location,
    });
    const startMs = sharedNow() - t0;
    q.on('epochCommitted', onCommit);
    q.on('progress', onProgress);
    const failed = q.awaitTermination().then(() => {
      throw new Error('the restarted benchmark query ended before the run did');
    });
    failed.catch(() => {});
    let interrupted: unknown;
    try {
      const done = () =>
        !Number.isNaN(firstRowAt) &&
        !Number.isNaN(firstCommitAt) &&
        !Number.isNaN(caughtUpAt) &&
        !Number.isNaN(loadedAt);
      // Polled: the times are stamped where they happen, the loop only decides when to stop.
      while (!done() && sharedNow() - t0 < plan.runForMs) {
        await Promise.race([sleep(50, undefined, { signal: plan.signal }), failed]);
      }
    } catch (e) {
      interrupted = e ?? new Error('interrupted');
    } finally {
      q.off('epochCommitted', onCommit);
      q.off('progress', onProgress);
    }
    // A query still catching up owes the rows due up to its stop's barrier (see CommitWatcher.stopped).
    const stopCalledAt = sharedNow();
    let stopError: string | null = null;
    try {
      await q.stop({ timeoutMs: RESTARTED_STOP_TIMEOUT_MS });
    } catch (e) {
      if (!(e instanceof MillraceError && e.code === ErrorCode.QUERY_STOP_TIMEOUT)) throw e;
      stopError = e.message;
    }
    if (interrupted !== undefined) throw interrupted;
    const stopMs = sharedNow() - stopCalledAt;
    const ranMs = sharedNow() - t0;
    // The earliest of the sink threads' reports, now that all have had time to arrive.
    const firstRow = probe.earliest();
    const since = (at: number) => (Number.isFinite(at) ? at - t0 : null);
    const report = firstReport as StreamingQueryProgress | null;
    const source = report?.sources[0];
    return {
      resumedAfterEpoch,
      restoredVersion,
      restoreFiles: files.length,
      restoreBytes,
      snapshotVersions: snapshotVersions(files),
      restoredKeys: restoredVersion === null ? 0 : await countKeys(files),
      downtimeMs: Number.isFinite(plan.stoppedAt) ? t0 - plan.stoppedAt : null,
      startMs,
      firstRowMs: since(firstRow),
      firstCommitMs: since(firstCommitAt),
      caughtUpMs: since(caughtUpAt),
      stateLoadedMs: since(loadedAt),
      backlogAtFirstReport:
        source === undefined ? null : sum(source.latestOffset ?? source.endOffset) - sum(source.endOffset),
      firstReportRows: report?.stateOperators[0]?.numRowsTotal ?? null,
      ranMs,
      stopMs,
      stopError,
    };
  } finally {
    probe.close();
  }
}

/** The newest committed epoch of a checkpoint (null: none). */
async function lastCommit(location: string): Promise<number | null> {
  let names: string[];
  try {
    names = await readdir(join(location, 'commits'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  const epochs = names.filter((n) => /^\d+$/.test(n)).map(Number);
  return epochs.length === 0 ? null : Math.max(...epochs);
}

/** The files a restore of `version` reads, every operator and partition. */
async function restoreFiles(location: string, version: number): Promise<RestoreFile[]> {
  const out: RestoreFile[] = [];
  const root = join(location, 'state');
  let operators: string[];
  try {
    operators = await readdir(root);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw e;
  }
  for (const op of operators.filter((n) => /^\d+$/.test(n))) {
    for (const partition of (await readdir(join(root, op))).filter((n) => /^\d+$/.test(n))) {
      for (const f of restorePlan(join(root, op, partition), version)) {
        out.push({ ...f, operator: Number(op), partition: Number(partition) });
      }
    }
  }
  return out;
}

function snapshotVersions(files: readonly RestoreFile[]): number[] {
  const byPartition = new Map<string, number>();
  for (const f of files) {
    const id = `${f.operator}/${f.partition}`;
    byPartition.set(id, Math.max(byPartition.get(id) ?? 0, f.kind === 'snapshot' ? f.version : 0));
  }
  return [...byPartition.values()];
}

/** Replays the files' keys as the restore does (removed, then written, file by file). */
async function countKeys(files: readonly RestoreFile[]): Promise<number | null> {
  let total = 0;
  let keys = new StateKeyReplay();
  let partition = '';
  try {
    for (const f of files) {
      const id = `${f.operator}/${f.partition}`;
      if (id !== partition) {
        total += keys.size;
        keys = new StateKeyReplay();
        partition = id;
      }
      const content = readStateFile(f.path, {
        kind: f.kind,
        version: f.version,
        operatorId: f.operator,
        partition: f.partition,
      });
      keys.apply(content);
      // Let the event loop breathe between files (each is up to ≈ 0.5 M entries).
      await sleep(0);
    }
  } catch {
    // A file the restarted run purged since (retention): the count is unknown.
    return null;
  }
  return total + keys.size;
}
