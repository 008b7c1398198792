import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readChecked } from '../checkpoint/files.js';
import { ErrorCode, MillraceError } from '../errors.js';
import type { StreamingQuery } from '../runtime/driver/streaming-query.js';
import { measureWallOffset, PreciseTime } from '../runtime/time/precise-time.js';
import { sharedNow } from './first-row-probe.js';
import { median } from './format.js';
import type { RunObserver } from './millrace-run.js';

/**
 * What the checkpointed run of `millrace bench checkpoint` wrote and how fast: the epochs committed
 * in the measured window and how long after their barrier, and the state files (sizes, and how
 * long after its epoch's barrier each was on disk). Everything is read from the query's
 * `epochCommitted` events and from the checkpoint directory after the run, so nothing is added to
 * the engine's paths.
 *
 * Times are the query's clock (wall-clock ms, see precise-time.ts). A fresh run cuts the barrier
 * of epoch `e` at `start + (e + 1) × interval`, where `start` is the schedule origin the run
 * recorded in `sources/0/schedule`; state version `v` is the state at the barrier of epoch `v − 1`.
 */

/** Milliseconds: median, 90th percentile and maximum of a list (null when it is empty). */
export interface Spread {
  p50: number;
  p90: number;
  max: number;
  count: number;
}

export function spread(values: readonly number[]): Spread | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  return {
    p50: median(s),
    p90: s[Math.min(s.length - 1, Math.ceil(0.9 * s.length) - 1)]!,
    max: s.at(-1)!,
    count: s.length,
  };
}

/** State files of one kind whose epoch's barrier fell in the measured window. */
export interface StateFileStats {
  /** Versions written (one file per partition each). */
  versions: number;
  /** Bytes of one version, all partitions together. */
  bytes: Spread | null;
  /** From the barrier of the version's epoch until its last partition's file was on disk (ms). */
  writtenAfterMs: Spread | null;
}

export interface CheckpointRunStats {
  intervalMs: number;
  /** Epochs committed in the measured window. */
  epochsCommitted: number;
  /** From each epoch's barrier until the driver announced its commit (ms), epochs of the window. */
  commitLagMs: Spread | null;
  /** Longest time between two commits in the window (ms). */
  maxCommitGapMs: number | null;
  snapshots: StateFileStats;
  changelogs: StateFileStats;
  /** Every file of the checkpoint directory at the end of the run (logs, state, metadata). */
  checkpointBytes: number;
  /** The state files alone. */
  stateBytes: number;
  /** The last epoch committed (the one the run's stop ended with). */
  lastCommittedEpoch: number | null;
  /** From the end of the window to `stop()` resolving or failing (ms). */
  stopMs: number | null;
  /** Why the stop failed (a timeout: the query had fallen behind); null when it did not. */
  stopError: string | null;
}

/**
 * The CPU time of the whole process over the measured window: `process.cpuUsage()` counts every
 * thread, the driver's and the workers'. What checkpoints cost shows here even when the rows'
 * latency cannot show it (a machine that was already saturated).
 */
export class CpuWatcher implements RunObserver {
  private from: NodeJS.CpuUsage | null = null;
  private fromAt = Number.NaN;
  /** CPU ms over the window, and the window's length (ms). */
  cpuMs: number | null = null;
  windowMs: number | null = null;

  started(_q: StreamingQuery): void {}

  window(phase: 'start' | 'end'): void {
    if (phase === 'start') {
      this.from = process.cpuUsage();
      this.fromAt = performance.now();
    } else if (this.from !== null) {
      const u = process.cpuUsage(this.from);
      this.cpuMs = (u.user + u.system) / 1000;
      this.windowMs = performance.now() - this.fromAt;
    }
  }

  /** A failed stop fails the run. */
  stopped(_error: unknown): boolean {
    return false;
  }
}

/** Collects the commits of the checkpointed run while it runs. */
export class CommitWatcher extends CpuWatcher {
  private readonly clock = new PreciseTime(measureWallOffset());
  private readonly commits: { epoch: number; at: number }[] = [];
  private windowStart = Number.NaN;
  private windowEnd = Number.NaN;
  private q: StreamingQuery | null = null;
  private readonly onCommit = (epoch: number) => this.commits.push({ epoch, at: this.clock.now() });
  /** When the query's stop resolved ({@link sharedNow}: the restart measures from the same clock). */
  stoppedAt = Number.NaN;
  private stopCalledAt = Number.NaN;
  private stopMs = Number.NaN;
  private stopError: string | null = null;

  override started(q: StreamingQuery): void {
    this.q = q;
    q.on('epochCommitted', this.onCommit);
  }

  override window(phase: 'start' | 'end'): void {
    super.window(phase);
    if (phase === 'start') {
      this.windowStart = this.clock.now();
    } else {
      this.windowEnd = this.clock.now();
      this.stopCalledAt = sharedNow();
    }
  }

  /**
   * A stop that timed out is a result: a query that fell behind its generated source owes the rows
   * due up to the stop's barrier, and its stop lasts until it made them. The workers were then
   * terminated, and a restart goes on after the last epoch committed before.
   */
  override stopped(error: unknown): boolean {
    this.q?.off('epochCommitted', this.onCommit);
    this.q = null;
    this.stoppedAt = sharedNow();
    this.stopMs = this.stoppedAt - this.stopCalledAt;
    if (error === undefined) return true;
    this.stopError = error instanceof Error ? error.message : String(error);
    return error instanceof MillraceError && error.code === ErrorCode.QUERY_STOP_TIMEOUT;
  }

  /** Reads the checkpoint after the run and puts the figures together. */
  async stats(location: string, intervalMs: number): Promise<CheckpointRunStats> {
    const start = await scheduleStart(location);
    const barrier = (epoch: number) => start + (epoch + 1) * intervalMs;
    const inWindow = (t: number) => t >= this.windowStart && t <= this.windowEnd;
    const commits = this.commits.filter((c) => inWindow(c.at));
    let maxGap: number | null = null;
    for (let i = 1; i < commits.length; i++) {
      maxGap = Math.max(maxGap ?? 0, commits[i]!.at - commits[i - 1]!.at);
    }
    const files = await stateFiles(location);
    const kind = (k: 'snapshot' | 'changelog'): StateFileStats => {
      // One entry per version: all its partitions' bytes, and when the last of them was written.
      const versions = new Map<number, { bytes: number; writtenAt: number }>();
      for (const f of files) {
        if (f.kind !== k || !inWindow(barrier(f.version - 1))) continue;
        const v = versions.get(f.version) ?? { bytes: 0, writtenAt: 0 };
        v.bytes += f.bytes;
        v.writtenAt = Math.max(v.writtenAt, f.mtimeMs);
        versions.set(f.version, v);
      }
      const list = [...versions.entries()];
      return {
        versions: list.length,
        bytes: spread(list.map(([, v]) => v.bytes)),
        writtenAfterMs: spread(list.map(([version, v]) => v.writtenAt - barrier(version - 1))),
      };
    };
    return {
      intervalMs,
      epochsCommitted: commits.length,
      commitLagMs: spread(commits.map((c) => c.at - barrier(c.epoch))),
      maxCommitGapMs: maxGap,
      snapshots: kind('snapshot'),
      changelogs: kind('changelog'),
      checkpointBytes: await directoryBytes(location),
      stateBytes: files.reduce((n, f) => n + f.bytes, 0),
      lastCommittedEpoch: this.commits.at(-1)?.epoch ?? null,
      stopMs: Number.isFinite(this.stopMs) ? this.stopMs : null,
      stopError: this.stopError,
    };
  }
}

/** The schedule origin of the first generated source: the query clock's time at the run's start. */
async function scheduleStart(location: string): Promise<number> {
  const payload = await readChecked(join(location, 'sources', '0', 'schedule'));
  return (JSON.parse(payload.toString()) as { startTimeMs: number }).startTimeMs;
}

export interface StateFile {
  operator: number;
  partition: number;
  version: number;
  kind: 'snapshot' | 'changelog';
  bytes: number;
  mtimeMs: number;
  path: string;
}

/** Every state file of a checkpoint (`state/<operator>/<partition>/<version>.<kind>`). */
export async function stateFiles(location: string): Promise<StateFile[]> {
  const out: StateFile[] = [];
  const root = join(location, 'state');
  for (const op of await names(root)) {
    if (!/^\d+$/.test(op)) continue;
    for (const partition of await names(join(root, op))) {
      if (!/^\d+$/.test(partition)) continue;
      for (const name of await names(join(root, op, partition))) {
        const m = /^(\d+)\.(changelog|snapshot)$/.exec(name);
        if (m === null) continue;
        const path = join(root, op, partition, name);
        const s = await stat(path);
        out.push({
          operator: Number(op),
          partition: Number(partition),
          version: Number(m[1]),
          kind: m[2] as 'snapshot' | 'changelog',
          bytes: s.size,
          mtimeMs: s.mtimeMs,
          path,
        });
      }
    }
  }
  return out;
}

async function names(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

/** Bytes of every file below `dir`. */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await directoryBytes(path);
    else if (entry.isFile()) total += (await stat(path)).size;
  }
  return total;
}

/** Median of the figures of several runs, or null when none has one. */
export function medianOf(values: readonly (number | null | undefined)[]): number | null {
  const present = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return present.length === 0 ? null : median(present);
}
