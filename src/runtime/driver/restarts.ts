import { ErrorCode, type MillraceError } from '../../errors.js';
import { backoffMs, type RestartPolicy } from '../../plan/restart-policy.js';

/**
 * Failures a restart from the checkpoint can get past: user code or a worker failing while the
 * query ran (the cause may be gone next time: a service back up, memory freed), a checkpoint
 * write that failed (a full disk may have been cleared), a sink's commit that failed (the new
 * attempt redoes the epoch, and the sink commits it then), and dead letters or late rows that could
 * not be written (the new attempt redoes the epochs they came from, and writes them). Everything
 * else is a property of the job, its data or its checkpoint that a new attempt meets again — a
 * checkpoint in use, corrupt or incompatible, a row too large for a ring — and ends the query at
 * once.
 */
const RETRYABLE: ReadonlySet<string> = new Set<string>([
  ErrorCode.TASK_FAILED,
  ErrorCode.CHECKPOINT_WRITE_FAILED,
  ErrorCode.SINK_COMMIT_FAILED,
  ErrorCode.SIDE_OUTPUT_WRITE_FAILED,
]);

export function isRetryable(error: MillraceError): boolean {
  return RETRYABLE.has(error.code);
}

/** The `restarting` event: an attempt failed and the next one starts after a backoff. */
export interface RestartEvent {
  /** The attempt that failed (1 for the first run). */
  readonly attempt: number;
  /** Why it failed. */
  readonly error: MillraceError;
  /** How long the query waits before the next attempt, in ms. */
  readonly backoffMs: number;
  /** When the next attempt starts: ms since the epoch on the query's clock. */
  readonly restartAt: number;
  /** Restarts the policy still allows after this one. */
  readonly retriesLeft: number;
}

/** What to do about a failed attempt. */
export type RestartDecision =
  | ({ readonly kind: 'restart' } & RestartEvent)
  | {
      readonly kind: 'giveUp';
      readonly error: MillraceError;
      readonly reason: 'noPolicy' | 'notRetryable' | 'retriesExhausted';
    };

/**
 * The restart policy's bookkeeping for one query handle: which attempt runs, how many restarts
 * are used, the last failure and when the next attempt is due. Pure decisions; the handle does
 * the waiting and the relaunching.
 */
export class RestartTracker {
  /** The attempt running (or, while backing off, the one that failed). */
  attempt = 1;
  private retries = 0;
  lastError: MillraceError | null = null;
  /** While backing off: when the next attempt starts (query clock, ms); otherwise null. */
  nextRestartAt: number | null = null;

  constructor(private readonly policy: RestartPolicy | null) {}

  get retriesLeft(): number {
    return this.policy === null ? 0 : this.policy.maxRetries - this.retries;
  }

  /** The running attempt failed with `error` at `now` (query clock). */
  failed(error: MillraceError, now: number): RestartDecision {
    this.lastError = error;
    this.nextRestartAt = null;
    if (this.policy === null) return { kind: 'giveUp', error, reason: 'noPolicy' };
    if (!isRetryable(error)) return { kind: 'giveUp', error, reason: 'notRetryable' };
    if (this.retries >= this.policy.maxRetries) return { kind: 'giveUp', error, reason: 'retriesExhausted' };
    this.retries++;
    const wait = backoffMs(this.policy, this.retries);
    this.nextRestartAt = now + wait;
    return {
      kind: 'restart',
      attempt: this.attempt,
      error,
      backoffMs: wait,
      restartAt: this.nextRestartAt,
      retriesLeft: this.retriesLeft,
    };
  }

  /** The backoff is over: the next attempt starts. */
  begin(): void {
    this.attempt++;
    this.nextRestartAt = null;
  }
}
