import { dirname } from 'node:path';
import { ErrorCode, MillraceError } from '../errors.js';
import { Lease, type LeaseLoss, type LeaseOptions } from './lease.js';
import type { LeaseRecord } from './lease-record.js';

/** What a checkpoint's lock says of the run holding it, beside the lease's own fields. */
export interface LockHolder {
  readonly queryId: string;
  readonly runId: string;
}

/** Who holds a checkpoint: the run, and the lease's holder (host, boot, process, heartbeat). */
export type LockOwner = LeaseRecord<LockHolder>;

/** "query q (run r, process 42 on host, since …)": who a lock's owner is. */
export function describeOwner(owner: LockOwner): string {
  return (
    `query ${owner.queryId} (run ${owner.runId}, process ${owner.pid} on ${owner.host}, ` +
    `since ${new Date(owner.startedAt).toISOString()})`
  );
}

/**
 * One running query per checkpoint: the checkpoint's `lock` file is a {@link Lease} held by the
 * run. A second start finds it and fails with CHECKPOINT_IN_USE naming the owner, unless the owner
 * is gone (the lock is taken over), or dying (its supervising CLI is gone: the start waits up to
 * one lease period for it to end). A run whose lock is taken over from it learns it at its next
 * heartbeat ({@link onLost}) and must stop.
 */
export class CheckpointLock {
  private lostError: MillraceError | null = null;

  private constructor(
    private readonly lease: Lease<LockHolder>,
    private readonly checkpoint: string,
  ) {}

  /** Locks the checkpoint whose lock file is `path` for run `who`, or throws CHECKPOINT_IN_USE. */
  static async acquire(path: string, who: LockHolder, options?: LeaseOptions): Promise<CheckpointLock> {
    const checkpoint = dirname(path);
    const got = await Lease.acquire<LockHolder>(path, { queryId: who.queryId, runId: who.runId }, options);
    if (got.lease === null) {
      throw new MillraceError(
        ErrorCode.CHECKPOINT_IN_USE,
        `checkpoint ${checkpoint} is in use by ${describeOwner(got.holder)}: ${got.why}; two runs must ` +
          'never share a checkpoint; stop the other run or use another checkpointLocation',
      );
    }
    return new CheckpointLock(got.lease, checkpoint);
  }

  /** The owner this lock records: this run. */
  get owner(): LockOwner {
    return this.lease.holder;
  }

  /** CHECKPOINT_IN_USE naming who took the checkpoint over, once the lock is found lost; else null. */
  get lost(): MillraceError | null {
    const loss = this.lease.lost;
    if (loss !== null && this.lostError === null) this.lostError = this.lostAs(loss);
    return this.lostError;
  }

  /**
   * Calls `listener` once, with CHECKPOINT_IN_USE naming the new owner, when another run is found
   * to have taken the checkpoint over (at once if it already was).
   */
  onLost(listener: (error: MillraceError) => void): void {
    this.lease.onLost(() => listener(this.lost!));
  }

  private lostAs(loss: LeaseLoss<LockHolder>): MillraceError {
    const what =
      loss.holder === null
        ? `checkpoint ${this.checkpoint} was lost by run ${this.owner.runId}: ${loss.why}`
        : `checkpoint ${this.checkpoint} was taken over by ${describeOwner(loss.holder)} while run ` +
          `${this.owner.runId} held it`;
    return new MillraceError(
      ErrorCode.CHECKPOINT_IN_USE,
      `${what}; this run stops: two runs must never share a checkpoint`,
    );
  }

  /**
   * Checks, reading the lock file now, that the checkpoint is still this run's; throws
   * CHECKPOINT_IN_USE naming the new owner when it is not (and the lock is then lost).
   */
  async confirm(): Promise<void> {
    if (await this.lease.confirm()) return;
    throw (
      this.lost ??
      new MillraceError(
        ErrorCode.CHECKPOINT_IN_USE,
        `checkpoint ${this.checkpoint}: run ${this.owner.runId} has released its lock`,
      )
    );
  }

  /** Renews the lock's lease now (a timer does it every few seconds). */
  heartbeat(): Promise<void> {
    return this.lease.renew();
  }

  /** Gives the checkpoint up (only if the lock is still this run's). */
  release(): Promise<void> {
    return this.lease.release();
  }
}
