import { EventEmitter } from 'node:events';
import { ErrorCode, MillraceError } from '../../errors.js';
import { DIAGNOSTICS_CHANNELS, publish } from '../../metrics/diagnostics.js';
import type { LatencyKind, LatencySummary } from '../../metrics/latency.js';
import { notifyListeners } from '../../metrics/listeners.js';
import type { EpochCommit, StreamingQueryProgress } from '../../metrics/progress.js';
import type { QueryTopology } from '../../metrics/query-view.js';
import { explain } from '../../plan/physical.js';
import type { DeadLetter, LateRow } from '../messages.js';
import { type ManualClock, notManual } from '../time/clock.js';
import type {
  MemorySinkHandle,
  MemorySourceHandle,
  QueryEvents,
  QueryState,
  QueryStatus,
} from './query-handle-types.js';
import { QueryRuntime, type RuntimeListener } from './query-runtime.js';
import { asMillraceError, carryOver, type RestartHost, RestartLoop } from './restart-loop.js';
import { type RestartDecision, RestartTracker } from './restarts.js';
import type { RuntimeConfig } from './runtime-config.js';

export type {
  MemorySinkHandle,
  MemorySourceHandle,
  QueryEvents,
  QueryState,
  QueryStatus,
} from './query-handle-types.js';

/** How many progress objects `recentProgress` keeps (Spark's default). */
export const PROGRESS_RETENTION = 100;
/** Epoch commits kept for {@link StreamingQuery.recentCommits} (the console's list). */
const COMMIT_RETENTION = 20;

export interface HandleOptions {
  console: (line: string, stream: 'stdout' | 'stderr') => void;
  /**
   * Opens the checkpoint again for a new attempt (a new run id), for the restart policy; required
   * when the query has one.
   */
  openAttempt?: () => Promise<RuntimeConfig>;
}

/**
 * A running query. Returned by `startQuery`; events: `started` (once per attempt), `progress`,
 * `idle` (an interval with no input), `terminated` (with the error, or null), `restarting`,
 * `deadLetter`, `epochCommitted`.
 *
 * With a restart policy, a failed attempt is followed by a new run from the checkpoint (a new
 * `runId`) after a backoff on the query's clock; the handle stays the same: its memory sources
 * and sink carry over, events keep coming, and `awaitTermination` settles only when the query
 * stops or the policy gives up.
 *
 * @example
 * const q = await startQuery(new URL('./jobs/alerts.js', import.meta.url));
 * q.on('progress', (p) => console.log(p.latencyMs.e2e.p99));
 * await q.awaitTermination();
 */
export class StreamingQuery extends EventEmitter<QueryEvents> {
  readonly id: string;
  readonly name: string | null;
  private state: QueryState = 'active';
  private failure: MillraceError | null = null;
  private progressLog: StreamingQueryProgress[] = [];
  private commitLog: EpochCommit[] = [];
  private runtime: QueryRuntime;
  private config: RuntimeConfig;
  private readonly restarts: RestartTracker;
  private readonly restartLoop: RestartLoop;
  /** The restart in progress (backoff, then the next attempt's launch); settles, never rejects. */
  private restartCycle: Promise<void> | undefined;
  /** Resolves when the running attempt ends (fails or the query finishes). */
  private attemptOver!: Promise<void>;
  private endAttempt!: () => void;
  private startTimeoutMs = 60_000;
  private readonly ended: Promise<void>;
  private resolveEnded!: () => void;
  private rejectEnded!: (e: Error) => void;
  private stopping: Promise<void> | undefined;
  /** The epoch the stop gave up (not committed: redone by the next run), or null. */
  private abandonedEpoch: number | null = null;

  /** @internal Use startQuery. */
  constructor(
    config: RuntimeConfig,
    private readonly handleOptions: HandleOptions,
  ) {
    super();
    this.config = config;
    this.id = config.queryId;
    this.name = config.name;
    this.restarts = new RestartTracker(config.options.restartPolicy);
    this.restartLoop = new RestartLoop(this.restarts, this.restartHost());
    this.newAttempt();
    this.ended = new Promise<void>((resolve, reject) => {
      this.resolveEnded = resolve;
      this.rejectEnded = reject;
    });
    // awaitTermination() may never be called; a failure must not become an unhandled rejection.
    this.ended.catch(() => {});
    this.runtime = new QueryRuntime(config, this.runtimeListener());
  }

  /** @internal */
  async launch(
    startTimeoutMs: number,
    initialData: Record<string, unknown[] | Record<number, unknown[]>>,
    continueFrom: StreamingQuery | undefined,
  ): Promise<void> {
    this.startTimeoutMs = startTimeoutMs;
    const runtime = this.runtime;
    await runtime.launch(startTimeoutMs, (feeds) => {
      if (continueFrom !== undefined) carryOver(continueFrom.runtime, runtime, feeds, false);
      for (const [name, data] of Object.entries(initialData)) {
        const feed = feeds.input(name);
        if (!feed) this.source(name); // throws UNKNOWN_SOURCE naming the sources there are
        if (Array.isArray(data)) feed!.preload(data, 0);
        else for (const [p, rows] of Object.entries(data)) feed!.preload(rows, Number(p));
      }
    });
    this.announceStart();
  }

  // --- attempts: start, restart wiring ------------------------------------------------------------

  /** The run id of the attempt running now: each restart is a new run, as in Spark. */
  get runId(): string {
    return this.config.runId;
  }

  private announceStart(): void {
    const event = {
      id: this.id,
      runId: this.runId,
      name: this.name,
      timestamp: new Date(this.config.clock.now()).toISOString(),
    };
    notifyListeners('onQueryStarted', event);
    publish(DIAGNOSTICS_CHANNELS.queryStart, () => ({ ...event, attempt: this.restarts.attempt }));
    // After the caller's `await startQuery(...)` continuation, so `q.on('started')` there sees it.
    setImmediate(() => this.emit('started'));
  }

  private newAttempt(): void {
    this.attemptOver = new Promise<void>((resolve) => {
      this.endAttempt = resolve;
    });
  }

  private restartHost(): RestartHost {
    return {
      clock: this.config.clock,
      openAttempt: () => {
        if (!this.handleOptions.openAttempt) throw new Error('internal: a restart policy needs openAttempt');
        return this.handleOptions.openAttempt();
      },
      listener: () => this.runtimeListener(),
      restarting: (event) => {
        publish(DIAGNOSTICS_CHANNELS.queryRestart, () => ({ id: this.id, name: this.name, ...event }));
        this.emit('restarting', event);
      },
    };
  }

  private runtimeListener(): RuntimeListener {
    // A failed attempt's runtime may still report while it winds down; only the running
    // attempt's failures and stop requests count.
    const attempt = this.restarts.attempt;
    const current = () => this.restarts.attempt === attempt;
    return {
      progress: (p) => this.onProgress(p),
      deadLetter: (d) => {
        publish(DIAGNOSTICS_CHANNELS.badRecord, () => ({ id: this.id, name: this.name, deadLetter: d }));
        this.emit('deadLetter', d);
      },
      lateRow: (r) => {
        publish(DIAGNOSTICS_CHANNELS.lateRow, () => ({ id: this.id, name: this.name, lateRow: r }));
        this.emit('lateRow', r);
      },
      epochCommitted: (e, commit) => {
        this.commitLog.push(commit);
        if (this.commitLog.length > COMMIT_RETENTION) this.commitLog.shift();
        publish(DIAGNOSTICS_CHANNELS.epochCommit, () => ({
          id: this.id,
          runId: this.runId,
          name: this.name,
          epoch: e,
          checkpointed: this.config.checkpoint !== null,
        }));
        this.emit('epochCommitted', e, commit);
      },
      failed: (e) => {
        if (current()) void this.onFailed(e);
      },
      stopRequested: () => {
        if (current()) void this.stop().catch(() => {});
      },
      consoleLine: (line, stream) => this.handleOptions.console(line, stream),
    };
  }

  // --- status -------------------------------------------------------------------------------------

  /** True until the query stops or fails for good (also while it restarts). */
  get isActive(): boolean {
    return this.state === 'active' || this.state === 'restarting';
  }

  /** The error that ended the query, or null. */
  get exception(): MillraceError | null {
    return this.failure;
  }

  get status(): QueryStatus {
    const last = this.lastProgress;
    const { attempt, lastError, nextRestartAt } = this.restarts;
    const message =
      this.state === 'failed'
        ? `Terminated with exception: ${this.failure?.message}`
        : this.state === 'terminated'
          ? this.abandonedEpoch === null
            ? 'Stopped'
            : `Stopped; epoch ${this.abandonedEpoch} did not commit in time and was given up: the next run reads its rows again`
          : this.state === 'stopping'
            ? 'Stopping'
            : this.state === 'restarting'
              ? nextRestartAt === null
                ? `Restarting: starting attempt ${attempt}`
                : `Restarting: attempt ${attempt} failed (${lastError?.message}); attempt ${attempt + 1} starts in ${Math.max(0, nextRestartAt - this.config.clock.now())} ms`
              : last && last.numInputRows > 0
                ? 'Processing new data'
                : 'Waiting for data to arrive';
    return {
      message,
      isDataAvailable: this.state !== 'restarting' && (last?.numInputRows ?? 0) > 0,
      isTriggerActive: this.state === 'active',
      isActive: this.isActive,
      state: this.state,
      attempt,
      retriesLeft: this.restarts.retriesLeft,
      lastError: lastError && { code: lastError.code, message: lastError.message },
      nextRestartAt,
    };
  }

  get lastProgress(): StreamingQueryProgress | null {
    return this.progressLog.at(-1) ?? null;
  }

  /** The most recent progress objects, oldest first (at most {@link PROGRESS_RETENTION}). */
  get recentProgress(): StreamingQueryProgress[] {
    return [...this.progressLog];
  }

  /** The manual clock of a query started with `{ clock: 'manual' }`. */
  get clock(): ManualClock {
    if (!this.config.clock.manual) throw notManual();
    return this.config.clock as ManualClock;
  }

  // --- waiting and stopping -----------------------------------------------------------------------

  /**
   * Resolves when the query ends by `stop()`, rejects with its error when it fails. With a
   * timeout: resolves `true` if it ended in time, `false` otherwise.
   */
  awaitTermination(): Promise<void>;
  awaitTermination(timeoutMs: number): Promise<boolean>;
  awaitTermination(timeoutMs?: number): Promise<unknown> {
    if (timeoutMs === undefined) return this.ended;
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      this.ended.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /**
   * Stops the query: sources end, every row already read is processed to the sink and committed
   * in a last epoch, every task and worker thread ends. Resolves when all of it has happened (or
   * the query had already ended).
   *
   * The last epoch may take at most `timeoutMs` (default 30 s) to commit: a query far behind its
   * sources (rings full ahead of a slow sink) gives it up then, and its threads end at once.
   * Nothing of the epoch given up was committed: with a checkpoint the next run reads its rows
   * again (the sinks' guarantees hold), and `status.message` says which epoch it was. Calling
   * `stop({ timeoutMs })` again while a stop waits cuts the wait to that (`0`: at once).
   *
   * @example
   * await q.stop();                  // waits for the last epoch to commit (up to 30 s)
   * await q.stop({ timeoutMs: 0 });  // ends at once; uncommitted rows are redone by the next run
   */
  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.state === 'restarting') {
      // Between attempts: the backoff ends now and no attempt follows; an attempt already being
      // launched is stopped once it runs.
      this.restartLoop.stop();
      this.stopping ??= this.restartCycle!.then(() =>
        this.state === 'active' ? this.stop(options) : undefined,
      );
      return this.stopping;
    }
    if (this.state !== 'active') {
      if (this.state === 'stopping' && options.timeoutMs !== undefined)
        this.runtime.hurryStop(options.timeoutMs);
      return this.stopping ?? Promise.resolve();
    }
    this.state = 'stopping';
    this.stopping = (async () => {
      try {
        const { abandonedEpoch } = await this.runtime.stop(options.timeoutMs ?? 30_000);
        this.abandonedEpoch = abandonedEpoch;
      } catch (e) {
        await this.finish(
          e instanceof MillraceError ? e : new MillraceError(ErrorCode.TASK_FAILED, String(e)),
        );
        throw e;
      }
      await this.finish(this.failure);
    })();
    return this.stopping;
  }

  /**
   * Resolves once every row added or available so far has been processed and what it produced
   * has reached the sink. Rejects if the query fails first.
   */
  async processAllAvailable(): Promise<void> {
    // With a restart policy the wait goes on through restarts: what the failed attempt had not
    // processed, the next one does.
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.state === 'restarting') {
        await this.restartCycle;
        continue;
      }
      if (this.state !== 'active') return;
      const over = this.attemptOver.then(() => 'over' as const);
      let failed: unknown;
      const outcome = await Promise.race([
        this.runtime.processAllAvailable().then(
          () => 'done' as const,
          (e: unknown) => {
            failed = e;
            return 'failed' as const;
          },
        ),
        over,
      ]);
      if (outcome === 'done') return;
      // The state moved on while we waited (TypeScript keeps the narrowing from before the await).
      if ((this.state as QueryState) === 'restarting' || outcome === 'over') continue;
      throw failed;
    }
  }

  // --- testing API: memory sources and sinks, metrics, explain ------------------------------------

  /** The memory source named `name`. */
  source<T = unknown>(name: string): MemorySourceHandle<T> {
    const feed = this.runtime.feeds.input(name);
    if (!feed) {
      const known = [...this.runtime.feeds.inputSources()].map((f) => f.name);
      throw new MillraceError(
        ErrorCode.UNKNOWN_SOURCE,
        `this query has no memory source named '${name}'${known.length ? ` (it has: ${known.join(', ')})` : ''}`,
      );
    }
    return {
      name,
      partitions: feed.partitions,
      addData: (rows, partition) => {
        if (this.state === 'restarting') {
          this.restartLoop.hold(name, feed.partitions, rows, partition);
          return;
        }
        if (this.state !== 'active') {
          throw new MillraceError(ErrorCode.QUERY_NOT_ACTIVE, `addData: the query is ${this.state}`);
        }
        // The attempt running now (a restart replaces the runtime, not the handle).
        this.runtime.feeds.input(name)!.addData(rows, partition);
      },
    };
  }

  /** The memory sink named `name`; readable after the query stops. */
  sink<T = unknown>(name: string): MemorySinkHandle<T> {
    const store = this.runtime.results.output;
    if (!store || store.name !== name) {
      throw new MillraceError(
        ErrorCode.UNKNOWN_SINK,
        `this query has no memory sink named '${name}'${store ? ` (it has: ${store.name})` : ''}`,
      );
    }
    // The store of the attempt running when asked: each attempt's store carries the committed
    // output of the one before.
    const now = () => this.runtime.results.output!;
    return { rows: () => now().rows<T>(), epochs: () => now().epochs<T>() };
  }

  /** Dead letters received so far (the newest 10 000). */
  deadLetters(): DeadLetter[] {
    return [...this.runtime.results.deadLetters];
  }

  /**
   * Resolves once every worker has reported what it counted and recorded so far, so that
   * {@link latencySummary} includes every row emitted before the call.
   */
  async collectMetrics(): Promise<void> {
    if (this.state !== 'active' && this.state !== 'stopping') return;
    await this.runtime.collectMetrics();
  }

  /** Starts the whole-run latency summary afresh (benchmarks call it after their warm-up). */
  resetLatencySummary(): void {
    this.runtime.latency.resetTotal();
  }

  /** Rows that arrived behind the watermark, under `onLateRow: 'sideOutput'` (the newest 10 000). */
  lateRows(): LateRow[] {
    return [...this.runtime.results.lateRows];
  }

  /** Latency over the whole run so far (or since {@link resetLatencySummary}), in ms. */
  latencySummary(): Record<LatencyKind, LatencySummary> {
    return this.runtime.latency.summary();
  }

  /** @internal The run's e2e histogram (benchmarks write it out). */
  e2eHistogram() {
    return this.runtime.latency.e2eHistogram();
  }

  /**
   * @internal The e2e histogram of the progress interval just reported (read in a `progress`
   * listener; benchmarks log latency over time with it).
   */
  intervalE2eHistogram() {
    return this.runtime.latency.lastIntervalE2e();
  }

  /** @internal Per task: its fullest input ring now, and its backpressure this run (for metrics). */
  taskGauges() {
    return this.isActive ? this.runtime.taskGauges() : [];
  }

  /** The most recent epoch commits, oldest first (the last 20): when, how long the driver took, bytes. */
  get recentCommits(): EpochCommit[] {
    return [...this.commitLog];
  }

  /** @internal The physical plan as data: stages, tasks, the worker each runs on, the rings (the console draws it). */
  topology(): QueryTopology {
    return this.runtime.topology();
  }

  /** The physical plan: stages, fused operators, shuffles, and which worker runs each task. */
  explain(): string {
    return `${explain(this.config.plan, this.config.physical)}\nWorkers: ${this.runtime.hostCount}`;
  }

  // --- progress, failures, restarts, the end ------------------------------------------------------

  private onProgress(p: StreamingQueryProgress): void {
    this.progressLog.push(p);
    if (this.progressLog.length > PROGRESS_RETENTION) this.progressLog.shift();
    this.emit('progress', p);
    notifyListeners('onQueryProgress', p);
    if (p.numInputRows === 0) {
      this.emit('idle', p);
      notifyListeners('onQueryIdle', { id: this.id, runId: this.runId, timestamp: p.timestamp });
    }
  }

  private async onFailed(error: MillraceError): Promise<void> {
    if (this.failure || this.state === 'terminated' || this.state === 'failed') return;
    if (this.state === 'restarting') {
      // The attempt being launched failed before its launch returned: the restart loop sees it.
      this.restartLoop.launchFailed(error);
      return;
    }
    if (this.state === 'stopping') {
      // stop() is waiting for the runtime; it finishes the query with this error. A failure
      // while stopping is not restarted: the user asked the query to end.
      this.failure = error;
      await this.runtime.abort();
      return;
    }
    // Decided before the first await, so that a processAllAvailable rejected by this failure
    // already finds the query restarting.
    const decision = this.restarts.failed(error, this.config.clock.now());
    this.endAttempt();
    if (decision.kind === 'restart') {
      this.state = 'restarting';
      this.restartCycle = this.restart(decision);
      return;
    }
    this.failure = error;
    this.state = 'stopping';
    // A stop() called meanwhile waits for the same end: threads gone, checkpoint released.
    this.stopping = (async () => {
      await this.runtime.abort();
      await this.finish(error);
    })();
    await this.stopping;
  }

  /** Between attempts; ends with the query running again, stopped, or failed for good. */
  private async restart(decision: RestartDecision): Promise<void> {
    try {
      const outcome = await this.restartLoop.run(this.runtime, decision, this.startTimeoutMs);
      switch (outcome.kind) {
        case 'running':
          this.config = outcome.config;
          this.runtime = outcome.runtime;
          this.activate();
          return;
        case 'stopped':
          await this.finish(null);
          return;
        case 'gaveUp':
          this.failure = outcome.error;
          await this.finish(outcome.error);
          return;
      }
    } catch (e) {
      this.failure = asMillraceError(e);
      await this.finish(this.failure);
    }
  }

  /** The new attempt runs: rows added meanwhile go to it, and it is announced. */
  private activate(): void {
    this.state = 'active';
    this.newAttempt();
    try {
      for (const { source, rows, partition } of this.restartLoop.takeHeld()) {
        this.runtime.feeds.input(source)!.addData(rows, partition);
      }
    } catch (e) {
      void this.onFailed(asMillraceError(e));
      return;
    }
    this.announceStart();
  }

  private async finish(error: MillraceError | null): Promise<void> {
    if (this.state === 'terminated' || this.state === 'failed') return;
    await this.runtime.shutdown();
    this.failure = error;
    this.state = error ? 'failed' : 'terminated';
    if (error) this.restarts.lastError = error;
    this.endAttempt();
    // No attempt follows: nothing is due, and rows held for one go nowhere.
    this.restarts.nextRestartAt = null;
    this.restartLoop.takeHeld();
    publish(DIAGNOSTICS_CHANNELS.queryEnd, () => ({
      id: this.id,
      runId: this.runId,
      name: this.name,
      error,
    }));
    this.emit('terminated', error);
    notifyListeners('onQueryTerminated', { id: this.id, runId: this.runId, exception: error });
    if (error) this.rejectEnded(error);
    else this.resolveEnded();
  }
}
