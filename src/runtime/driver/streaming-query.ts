import { EventEmitter } from 'node:events';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { LatencyKind, LatencySummary } from '../../metrics/latency.js';
import { notifyListeners } from '../../metrics/listeners.js';
import type { StreamingQueryProgress } from '../../metrics/progress.js';
import { explain } from '../../plan/physical.js';
import type { DeadLetter, LateRow } from '../messages.js';
import { type ManualClock, notManual } from '../time/clock.js';
import { QueryRuntime, type RuntimeConfig, type RuntimeListener } from './query-runtime.js';
import type { SinkEpoch } from './sink-store.js';

export type QueryState = 'active' | 'stopping' | 'terminated' | 'failed';

/** Spark's StreamingQueryStatus, plus the lifecycle state. */
export interface QueryStatus {
  message: string;
  isDataAvailable: boolean;
  isTriggerActive: boolean;
  isActive: boolean;
  state: QueryState;
}

/** A test's handle on a memory source. */
export interface MemorySourceHandle<T = unknown> {
  readonly name: string;
  readonly partitions: number;
  /** Appends rows to the source's replayable log (partition 0 by default). */
  addData(rows: Iterable<T>, partition?: number): void;
}

/** A test's handle on a memory sink. */
export interface MemorySinkHandle<T = unknown> {
  /** Every row written so far: epochs in order; within an epoch, partition by partition in emit order. */
  rows(): T[];
  /** The same rows grouped by epoch. */
  epochs(): SinkEpoch<T>[];
}

export interface QueryEvents {
  started: [];
  progress: [StreamingQueryProgress];
  idle: [StreamingQueryProgress];
  terminated: [MillraceError | null];
  deadLetter: [DeadLetter];
  lateRow: [LateRow];
  epochCommitted: [number];
}

/** How many progress objects `recentProgress` keeps (Spark's default). */
export const PROGRESS_RETENTION = 100;

export interface HandleOptions {
  console: (line: string, stream: 'stdout' | 'stderr') => void;
}

/**
 * A running query. Returned by `startQuery`; events: `started`, `progress`, `idle` (an interval
 * with no input), `terminated` (with the error, or null), `deadLetter`, `epochCommitted`.
 *
 * @example
 * const q = await startQuery(new URL('./jobs/alerts.js', import.meta.url));
 * q.on('progress', (p) => console.log(p.latencyMs.e2e.p99));
 * await q.awaitTermination();
 */
export class StreamingQuery extends EventEmitter<QueryEvents> {
  readonly id: string;
  readonly runId: string;
  readonly name: string | null;
  private state: QueryState = 'active';
  private failure: MillraceError | null = null;
  private progressLog: StreamingQueryProgress[] = [];
  private readonly runtime: QueryRuntime;
  private readonly ended: Promise<void>;
  private resolveEnded!: () => void;
  private rejectEnded!: (e: Error) => void;
  private stopping: Promise<void> | undefined;

  /** @internal Use startQuery. */
  constructor(
    private readonly config: RuntimeConfig,
    private readonly handleOptions: HandleOptions,
  ) {
    super();
    this.id = config.queryId;
    this.runId = config.runId;
    this.name = config.name;
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
    await this.runtime.launch(startTimeoutMs, (feeds) => {
      if (continueFrom !== undefined) {
        for (const feed of continueFrom.runtime.feeds.memorySources()) {
          const mine = feeds.memorySource(feed.spec.name);
          if (mine === undefined) continue;
          for (const [p, rows] of feed.snapshot().entries())
            if (p < mine.spec.partitions) mine.preload(rows, p);
        }
        const store = continueFrom.runtime.results.memorySink;
        if (store && this.runtime.results.memorySink?.name === store.name) {
          this.runtime.results.memorySink.carryCommitted(store);
        }
      }
      for (const [name, data] of Object.entries(initialData)) {
        const feed = feeds.memorySource(name);
        if (!feed) this.source(name); // throws UNKNOWN_SOURCE naming the sources there are
        if (Array.isArray(data)) feed!.preload(data, 0);
        else for (const [p, rows] of Object.entries(data)) feed!.preload(rows, Number(p));
      }
    });
    const event = {
      id: this.id,
      runId: this.runId,
      name: this.name,
      timestamp: new Date(this.config.clock.now()).toISOString(),
    };
    notifyListeners('onQueryStarted', event);
    // After the caller's `await startQuery(...)` continuation, so `q.on('started')` there sees it.
    setImmediate(() => this.emit('started'));
  }

  private runtimeListener(): RuntimeListener {
    return {
      progress: (p) => this.onProgress(p),
      deadLetter: (d) => this.emit('deadLetter', d),
      lateRow: (r) => this.emit('lateRow', r),
      epochCommitted: (e) => this.emit('epochCommitted', e),
      failed: (e) => void this.onFailed(e),
      stopRequested: () => void this.stop().catch(() => {}),
      consoleLine: (line, stream) => this.handleOptions.console(line, stream),
    };
  }

  get isActive(): boolean {
    return this.state === 'active';
  }

  /** The error that ended the query, or null. */
  get exception(): MillraceError | null {
    return this.failure;
  }

  get status(): QueryStatus {
    const last = this.lastProgress;
    const message =
      this.state === 'failed'
        ? `Terminated with exception: ${this.failure?.message}`
        : this.state === 'terminated'
          ? 'Stopped'
          : this.state === 'stopping'
            ? 'Stopping'
            : last && last.numInputRows > 0
              ? 'Processing new data'
              : 'Waiting for data to arrive';
    return {
      message,
      isDataAvailable: (last?.numInputRows ?? 0) > 0,
      isTriggerActive: this.state === 'active',
      isActive: this.state === 'active',
      state: this.state,
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
   * Stops the query: sources end, every row already read is processed to the sink, every task and
   * worker thread ends. Resolves when all of it has happened (or the query had already ended).
   */
  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.state !== 'active') return this.stopping ?? Promise.resolve();
    this.state = 'stopping';
    this.stopping = (async () => {
      try {
        await this.runtime.stop(options.timeoutMs ?? 30_000);
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
    if (this.failure) throw this.failure;
    if (this.state !== 'active') return;
    await this.runtime.processAllAvailable();
  }

  /** The memory source named `name`. */
  source<T = unknown>(name: string): MemorySourceHandle<T> {
    const feed = this.runtime.feeds.memorySource(name);
    if (!feed) {
      const known = [...this.runtime.feeds.memorySources()].map((f) => f.spec.name);
      throw new MillraceError(
        ErrorCode.UNKNOWN_SOURCE,
        `this query has no memory source named '${name}'${known.length ? ` (it has: ${known.join(', ')})` : ''}`,
      );
    }
    return {
      name,
      partitions: feed.spec.partitions,
      addData: (rows, partition) => {
        if (this.state !== 'active') {
          throw new MillraceError(ErrorCode.QUERY_NOT_ACTIVE, `addData: the query is ${this.state}`);
        }
        feed.addData(rows, partition);
      },
    };
  }

  /** The memory sink named `name`; readable after the query stops. */
  sink<T = unknown>(name: string): MemorySinkHandle<T> {
    const store = this.runtime.results.memorySink;
    if (!store || store.name !== name) {
      throw new MillraceError(
        ErrorCode.UNKNOWN_SINK,
        `this query has no memory sink named '${name}'${store ? ` (it has: ${store.name})` : ''}`,
      );
    }
    return { rows: () => store.rows<T>(), epochs: () => store.epochs<T>() };
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
    if (this.state === 'terminated' || this.state === 'failed') return;
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

  /** The physical plan: stages, fused operators, shuffles, and which worker runs each task. */
  explain(): string {
    return `${explain(this.config.plan, this.config.physical)}\nWorkers: ${this.runtime.hostCount}`;
  }

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
    this.failure = error;
    if (this.state === 'stopping') {
      // stop() is waiting for the runtime; it finishes the query with this error.
      await this.runtime.abort();
      return;
    }
    this.state = 'stopping';
    await this.runtime.abort();
    await this.finish(error);
  }

  private async finish(error: MillraceError | null): Promise<void> {
    if (this.state === 'terminated' || this.state === 'failed') return;
    await this.runtime.shutdown();
    this.failure = error;
    this.state = error ? 'failed' : 'terminated';
    this.emit('terminated', error);
    notifyListeners('onQueryTerminated', { id: this.id, runId: this.runId, exception: error });
    if (error) this.rejectEnded(error);
    else this.resolveEnded();
  }
}
