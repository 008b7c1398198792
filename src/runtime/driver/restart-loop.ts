import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import type { Clock } from '../time/clock.js';
import { createTimerQueue } from '../time/timer-queue.js';
import type { Feeds } from './feeds.js';
import { QueryRuntime, type RuntimeListener } from './query-runtime.js';
import type { RestartDecision, RestartEvent, RestartTracker } from './restarts.js';
import type { RuntimeConfig } from './runtime-config.js';

/** How a restart ended: the next attempt runs, stop() came first, or the policy gave up. */
export type RestartOutcome =
  | { readonly kind: 'running'; readonly runtime: QueryRuntime; readonly config: RuntimeConfig }
  | { readonly kind: 'stopped' }
  | { readonly kind: 'gaveUp'; readonly error: MillraceError };

/** Rows added to a memory source between attempts, for the next one. */
export interface HeldRows {
  readonly source: string;
  readonly rows: unknown[];
  readonly partition: number | undefined;
}

/** What the restart loop needs from the query handle. */
export interface RestartHost {
  /** The query's clock (the same for every attempt): backoffs wait on it, a manual clock in tests. */
  readonly clock: Clock;
  /** Opens the checkpoint for a new run (a new run id). */
  openAttempt(): Promise<RuntimeConfig>;
  /** A listener for the next attempt's runtime; called once the tracker counts that attempt. */
  listener(): RuntimeListener;
  /** An attempt failed and the next one starts after `event.backoffMs`. */
  restarting(event: RestartEvent): void;
}

/**
 * Restarts a failed query (docs/operations.md, "Restart policy"): waits out the backoff on the query's clock, then launches
 * the next attempt from the checkpoint, handing it the memory sources' logs, the memory sink's
 * committed output and the dead letters of the one before; an attempt that fails to launch
 * counts as a failed attempt. The handle stays the same; only its runtime is replaced.
 */
export class RestartLoop {
  private cancelBackoff: (() => void) | undefined;
  private stopRequested = false;
  /** A failure of the attempt being launched, reported before its launch returned. */
  private launchFailure: MillraceError | null = null;
  private held: HeldRows[] = [];

  constructor(
    private readonly tracker: RestartTracker,
    private readonly host: RestartHost,
  ) {}

  /** stop() while restarting: the backoff ends now and no further attempt is launched. */
  stop(): void {
    this.stopRequested = true;
    this.cancelBackoff?.();
  }

  /** The attempt being launched failed before its launch returned. */
  launchFailed(error: MillraceError): void {
    this.launchFailure ??= error;
  }

  /**
   * Keeps rows a test adds between attempts for the next one, which takes them after the rows it
   * carries over (their offsets follow). Checked now, as addData would check them.
   */
  hold(source: string, partitions: number, rows: Iterable<unknown>, partition: number | undefined): void {
    const p = partition ?? 0;
    if (!Number.isInteger(p) || p < 0 || p >= partitions) {
      throw invalidArgument(
        `addData: source '${source}' has ${partitions} partition(s); partition ${partition} does not exist`,
      );
    }
    if (rows == null || typeof (rows as Iterable<unknown>)[Symbol.iterator] !== 'function') {
      throw invalidArgument('addData: rows must be an array (or iterable) of rows');
    }
    this.held.push({ source, rows: [...rows], partition });
  }

  /** The rows held so far, in the order they were added; forgets them. */
  takeHeld(): HeldRows[] {
    const held = this.held;
    this.held = [];
    return held;
  }

  /** Runs from the failure of `failed` (already decided to restart) to an outcome. */
  async run(failed: QueryRuntime, first: RestartDecision, startTimeoutMs: number): Promise<RestartOutcome> {
    let decision = first;
    // The runtime holding the newest memory logs and sink output.
    let carrier = failed;
    // Every worker of the failed attempt ends, and the checkpoint lock is released, before the
    // next attempt takes the checkpoint.
    await failed.abort();
    for (;;) {
      if (decision.kind === 'giveUp') return { kind: 'gaveUp', error: decision.error };
      const { kind: _, ...event } = decision;
      this.host.restarting(event);
      if (!(await this.backoff(decision.restartAt))) return { kind: 'stopped' };
      this.tracker.begin();
      this.launchFailure = null;
      let config: RuntimeConfig | undefined;
      let runtime: QueryRuntime | undefined;
      let launched = false;
      try {
        config = await this.host.openAttempt();
        const next = new QueryRuntime(config, this.host.listener());
        runtime = next;
        const from = carrier;
        await next.launch(startTimeoutMs, (feeds) => {
          carryOver(from, next, feeds, true);
          carrier = next;
        });
        launched = true;
        if (this.launchFailure) throw this.launchFailure;
        return { kind: 'running', runtime: next, config };
      } catch (e) {
        // A launch that threw has released what it held; one that ran and then failed is aborted.
        if (launched) await runtime?.abort();
        await config?.checkpoint?.close();
        decision = this.tracker.failed(asMillraceError(e), this.host.clock.now());
      }
    }
  }

  /** Resolves true once the query's clock reaches `at`, false if stop() comes first. */
  private backoff(at: number): Promise<boolean> {
    const { clock } = this.host;
    if (this.stopRequested) return Promise.resolve(false);
    if (at <= clock.now()) return Promise.resolve(true);
    const timers = createTimerQueue(clock);
    return new Promise<boolean>((resolve) => {
      const settle = (due: boolean) => {
        this.cancelBackoff = undefined;
        // Not from inside the manual clock's listener loop that fired the timer.
        queueMicrotask(() => timers.dispose());
        resolve(due);
      };
      timers.at(at, () => settle(true));
      this.cancelBackoff = () => settle(false);
    });
  }
}

/**
 * Seeds a new run with what an earlier one leaves: the logs of sources the program feeds (rows
 * before the committed offsets are not sent again) and a kept sink's committed epochs — and, for the next attempt
 * of the same handle, the dead letters, late rows and whole-run latency so far.
 */
export function carryOver(from: QueryRuntime, to: QueryRuntime, feeds: Feeds, sameHandle: boolean): void {
  for (const feed of from.feeds.inputSources()) {
    const mine = feeds.input(feed.name);
    if (mine === undefined) continue;
    for (const [p, rows] of feed.snapshot().entries()) if (p < mine.partitions) mine.preload(rows, p);
  }
  const store = from.results.output;
  if (store && to.results.output?.name === store.name) to.results.output.carryCommitted(store);
  if (!sameHandle) return;
  to.results.deadLetters.push(...from.results.deadLetters);
  to.results.lateRows.push(...from.results.lateRows);
  to.latency.carryTotal(from.latency);
}

export function asMillraceError(e: unknown): MillraceError {
  return e instanceof MillraceError
    ? e
    : new MillraceError(ErrorCode.TASK_FAILED, (e as Error)?.message ?? String(e), { cause: e });
}
