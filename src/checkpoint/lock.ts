import { randomBytes } from 'node:crypto';
import { link, mkdir, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { ErrorCode, MillraceError } from '../errors.js';
import { readCheckedIfExists, syncDirectory, withChecksum, writeFileAtomic } from './files.js';

/** Who holds a checkpoint. */
export interface LockOwner {
  readonly queryId: string;
  readonly runId: string;
  readonly pid: number;
  readonly host: string;
  readonly startedAt: number;
  readonly heartbeatAt: number;
}

/** A lock whose heartbeat is older than this is stale when its owner is on another host. */
export const LOCK_STALE_AFTER_MS = 30_000;
export const LOCK_HEARTBEAT_MS = 10_000;

/** Whether a process of this host exists (a permission error means it does). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One running query per checkpoint. The lock file is created exclusively (a complete file is
 * linked into place, so nobody ever reads a half-written lock); a second start finds it and fails
 * with CHECKPOINT_IN_USE naming the owner — unless the owner is dead (same host: its process is
 * gone; another host: its heartbeat is stale), in which case the lock is taken over.
 */
export class CheckpointLock {
  private timer: NodeJS.Timeout | undefined;
  private owner: LockOwner;

  private constructor(
    private readonly path: string,
    owner: LockOwner,
  ) {
    this.owner = owner;
  }

  static async acquire(path: string, who: { queryId: string; runId: string }): Promise<CheckpointLock> {
    await mkdir(dirname(path), { recursive: true });
    const now = Date.now();
    const owner: LockOwner = { ...who, pid: process.pid, host: hostname(), startedAt: now, heartbeatAt: now };
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await CheckpointLock.create(path, owner)) {
        const lock = new CheckpointLock(path, owner);
        lock.timer = setInterval(() => void lock.heartbeat().catch(() => {}), LOCK_HEARTBEAT_MS);
        lock.timer.unref();
        return lock;
      }
      const held = await CheckpointLock.read(path);
      if (held !== undefined && CheckpointLock.live(held)) {
        throw new MillraceError(
          ErrorCode.CHECKPOINT_IN_USE,
          `checkpoint ${dirname(path)} is in use by query ${held.queryId} (run ${held.runId}, process ${held.pid} on ` +
            `${held.host}, since ${new Date(held.startedAt).toISOString()}): two runs must never share a checkpoint; ` +
            'stop the other run or use another checkpointLocation',
        );
      }
      // The owner is gone: take the lock over.
      await unlink(path).catch(() => {});
    }
    throw new MillraceError(
      ErrorCode.CHECKPOINT_IN_USE,
      `could not take the lock of checkpoint ${dirname(path)}`,
    );
  }

  /** Creates the lock file only if none exists. */
  private static async create(path: string, owner: LockOwner): Promise<boolean> {
    const temp = join(dirname(path), `.lock.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(temp, withChecksum(Buffer.from(JSON.stringify(owner))));
    try {
      await link(temp, path);
      await syncDirectory(dirname(path));
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    } finally {
      await unlink(temp).catch(() => {});
    }
  }

  private static async read(path: string): Promise<LockOwner | undefined> {
    try {
      const bytes = await readCheckedIfExists(path);
      return bytes === undefined ? undefined : (JSON.parse(bytes.toString()) as LockOwner);
    } catch {
      return undefined; // unreadable: treated as stale
    }
  }

  private static live(owner: LockOwner): boolean {
    if (owner.host === hostname()) return processExists(owner.pid);
    return Date.now() - owner.heartbeatAt < LOCK_STALE_AFTER_MS;
  }

  /** Refreshes the heartbeat (for owners on other hosts sharing the storage). */
  async heartbeat(): Promise<void> {
    this.owner = { ...this.owner, heartbeatAt: Date.now() };
    await writeFileAtomic(this.path, Buffer.from(JSON.stringify(this.owner)));
  }

  /** Gives the checkpoint up (only if the lock is still ours). */
  async release(): Promise<void> {
    clearInterval(this.timer);
    const held = await CheckpointLock.read(this.path);
    if (held?.runId === this.owner.runId) await unlink(this.path).catch(() => {});
  }
}
