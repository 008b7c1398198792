import type { CheckpointManager, RecoveryPoint } from '../../checkpoint/manager.js';
import { sourceConnector } from '../../connectors/registry.js';
import { SideOutputs } from '../../connectors/side-output/side-outputs.js';
import { createSinkCommitter } from '../../connectors/sink-committer.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import { LatencyAggregator } from '../../metrics/latency.js';
import type { EpochCommit, StreamingQueryProgress } from '../../metrics/progress.js';
import type { QueryTopology, TaskGauge } from '../../metrics/query-view.js';
import { describeOperator } from '../../plan/analyze.js';
import { STATEFUL_KINDS } from '../../plan/nodes.js';
import { describeKey } from '../../plan/physical.js';
import { isMicroBatch } from '../../plan/trigger.js';
import { DoorbellTable } from '../channel/doorbell.js';
import { FrameKind } from '../channel/frame-kind.js';
import { ringFill } from '../channel/spsc-ring.js';
import {
  ABORT_SLOT,
  createControl,
  REPORT_GEN_SLOT,
  START_TIME_F64,
  STARTED_SLOT,
} from '../control-layout.js';
import type { DeadLetter, HostMessage, LateRow, TaskCounters } from '../messages.js';
import type { Clock, ManualClock } from '../time/clock.js';
import { PreciseTime } from '../time/precise-time.js';
import { createTimerQueue, type TimerQueue } from '../time/timer-queue.js';
import { EpochCoordinator } from './epoch-coordinator.js';
import { Feeds } from './feeds.js';
import { FlushWaiters } from './flush-waiters.js';
import { HostPool } from './host-pool.js';
import { HostSinkCommits } from './host-sink-commits.js';
import { hostSpecs, udfWorkerSpecs } from './host-specs.js';
import { MicroBatchExecution, type MicroBatchHost } from './micro-batch.js';
import { ProgressBuilder } from './progress-builder.js';
import { Pump } from './pump.js';
import { ReportRounds } from './report-rounds.js';
import { Results } from './results.js';
import { type RuntimeConfig, resolveWorkers } from './runtime-config.js';
import { UdfPool } from './udf-pool.js';
import { type Wiring, wire } from './wiring.js';

/** What the runtime tells the query handle. */
export interface RuntimeListener {
  progress(p: StreamingQueryProgress): void;
  deadLetter(d: DeadLetter): void;
  lateRow(r: LateRow): void;
  epochCommitted(epoch: number, commit: EpochCommit): void;
  /** The query failed after it started (a task threw, a worker died). */
  failed(error: MillraceError): void;
  /** A trigger that ends by itself (availableNow, once) is done: stop the query. */
  stopRequested(): void;
  consoleLine(line: string, stream: 'stdout' | 'stderr'): void;
}

/** How long a failing query waits for workers to leave their loops before terminating them. */
const ABORT_GRACE_MS = 2000;

/**
 * The machinery that owns a running query's resources: the Piscina pool hosting its tasks, every
 * ring, the driver's pump (draining result rings, refilling feed rings), the clock timers cutting
 * epochs and progress intervals, and the collection of workers' reports.
 */
export class QueryRuntime implements MicroBatchHost {
  readonly bells: DoorbellTable;
  readonly feeds: Feeds;
  readonly results: Results;
  readonly latency = new LatencyAggregator();
  readonly precise: PreciseTime;
  private readonly control: Int32Array;
  private readonly hosts: HostPool;
  /** The threads that run Arrow UDFs (none when the query has no Arrow operator). */
  private readonly udf: UdfPool;
  /** Sink commits (`commitSink`) waiting for hosts to answer. */
  private readonly sinkCommits = new HostSinkCommits(
    () => this.hosts.live(),
    (i, message) => this.hosts.post(i, message),
  );
  readonly timers: TimerQueue;
  readonly clock: Clock;
  readonly coordinator: EpochCoordinator;
  readonly checkpoint: CheckpointManager | null;
  readonly asyncProgressTracking: boolean;
  readonly recovery: RecoveryPoint | null;
  private microBatch: MicroBatchExecution | null = null;
  /** Micro-batch mode: the batch the next progress object reports. */
  private reportingBatch: { batchId: number; startedAt: number; durationMs: number } | null = null;
  private readonly progress: ProgressBuilder;
  private readonly counters = new Map<number, TaskCounters>();
  private readonly wiring: Wiring;
  private unsubscribeClock: (() => void) | undefined;
  startTime = Number.NaN;
  private nextEpoch = 0;
  /** While stop() waits for the last epoch: gives it up now. */
  private giveUp: (() => void) | null = null;
  /** When the stop under way gives up the last epoch (ms, system clock). */
  private stopDeadline = Number.POSITIVE_INFINITY;
  private readonly flushes = new FlushWaiters();
  private readonly rounds: ReportRounds;
  private readonly pump: Pump;
  /** Where dead letters and late rows are written (the `deadLetters`, `lateRows` options). */
  private readonly sideOutputs: SideOutputs;
  private failure: MillraceError | null = null;
  private shutDown = false;
  private shutdownDone: Promise<void> | undefined;

  constructor(
    private readonly config: RuntimeConfig,
    private readonly listener: RuntimeListener,
  ) {
    const { physical, options, clock } = config;
    const hostCount = Math.min(resolveWorkers(options), physical.tasks.length);
    const wiring = wire(
      physical,
      hostCount,
      options.ringCapacityBytes,
      options.udfWorkers,
      options.isolateUdfs,
    );
    this.wiring = wiring;
    this.bells = DoorbellTable.create(hostCount + 1 + wiring.udfWorkers.length);
    this.control = new Int32Array(createControl());
    this.precise = new PreciseTime(config.wallOffset);
    const microBatch = isMicroBatch(config.plan.definition.trigger);
    this.clock = clock;
    // Every task of every stage a stateful operator heads reports at each epoch's end.
    const statefulTasks = physical.stages
      .filter((s) => s.chain[0] !== undefined && STATEFUL_KINDS.includes(s.chain[0].node.kind))
      .reduce((n, s) => n + s.partitions, 0);
    this.checkpoint = config.checkpoint;
    this.asyncProgressTracking = config.options.asyncProgressTracking;
    this.recovery = config.recovery;
    const resumedAfter = config.recovery?.committedEpoch ?? -1;
    this.nextEpoch = resumedAfter + 1;
    this.feeds = new Feeds(physical, wiring, this.bells, this.precise, microBatch);
    this.sideOutputs = new SideOutputs(options, config.runId, (e) => this.fail(e));
    this.coordinator = new EpochCoordinator(
      {
        sourcePartitions: config.plan.sources.map((s) => s.spec.partitions),
        statefulPartitions: statefulTasks,
        stateDurable: config.checkpoint !== null,
        watermarkInputs: config.plan.watermarks.length,
        checkpoint: config.checkpoint,
        offsetsAtCommit: !microBatch || options.asyncProgressTracking,
        progressLogIntervalMs: options.asyncProgressTracking
          ? options.asyncProgressTrackingCheckpointIntervalMs
          : null,
        committedEpoch: resumedAfter,
        retention: options.minBatchesToRetain,
        sinkCommitter: this.sideOutputs.beforeEachCommit(
          createSinkCommitter(config.plan.definition.sink, config.plan.definition.outputMode, (e) =>
            this.sinkCommits.request(e),
          ),
        ),
      },
      {
        committed: (epoch, _reports, offsets, commit) => {
          this.results.sinkRows?.commitEpoch?.(epoch);
          this.feeds.committed(offsets);
          listener.epochCommitted(epoch, commit);
          this.settleFlushes();
        },
        // A step of the commit that says what failed (the sink's commit) keeps its code.
        failed: (e) =>
          this.fail(
            e instanceof MillraceError
              ? e
              : new MillraceError(
                  ErrorCode.CHECKPOINT_WRITE_FAILED,
                  `writing the checkpoint failed: ${(e as Error)?.message ?? String(e)}`,
                  { cause: e },
                ),
          ),
        now: () => clock.now(),
      },
    );
    const { sink, outputMode } = config.plan.definition;
    this.results = new Results(
      sink,
      outputMode,
      physical,
      wiring,
      this.bells,
      {
        deadLetter: (d) => {
          this.sideOutputs.deadLetter(d);
          listener.deadLetter(d);
        },
        lateRow: (r) => {
          this.sideOutputs.lateRow(r);
          listener.lateRow(r);
        },
        epochAcked: (e) => this.coordinator.acked(e),
        sourceOffset: (e, s, p, o) => this.coordinator.sourceOffset(e, s, p, o),
        sourceWatermark: (e, s, p, w, behind) => this.coordinator.sourceWatermark(e, s, p, w, behind),
        stateReport: (r) => this.coordinator.stateReport(r),
        stateWritten: (e) => this.coordinator.stateWritten(e),
        sinkCommit: (c) => this.coordinator.sinkCommit(c.epoch, c.message),
        consoleLine: (line, stream) => listener.consoleLine(line, stream),
      },
      resumedAfter,
    );
    this.pump = new Pump(this.results, this.feeds, this.bells, {
      settle: () => {
        this.coordinator.check();
        this.settleFlushes();
      },
      failed: (e) =>
        this.onFailure(
          e instanceof MillraceError
            ? e
            : new MillraceError(ErrorCode.TASK_FAILED, `driver: ${(e as Error).message}`, { cause: e }),
        ),
    });
    this.timers = createTimerQueue(clock);
    this.progress = new ProgressBuilder(config, this.feeds);
    this.rounds = new ReportRounds({
      ask: (gen) => {
        Atomics.store(this.control, REPORT_GEN_SLOT, gen);
        this.bells.ringAll();
      },
      liveHosts: () => this.hosts.live(),
      progress: (requestedAt) => {
        const batch = this.reportingBatch;
        this.listener.progress(
          this.progress.build({
            now: batch?.startedAt ?? this.config.clock.now(),
            counters: this.counters,
            latency: this.latency.takeInterval(),
            reportLatencyMs: performance.now() - requestedAt,
            epoch: batch?.batchId ?? this.coordinator.lastCommittedEpoch + 1,
            durationMs: batch?.durationMs,
          }),
        );
      },
    });
    const specs = hostSpecs(config, wiring, {
      bells: this.bells.sab,
      control: this.control.buffer as SharedArrayBuffer,
      microBatch,
      firstEpoch: this.nextEpoch,
    });
    const udfControl = createControl();
    this.udf = new UdfPool(
      udfWorkerSpecs(config, wiring, this.bells.sab, udfControl),
      udfControl,
      (bell) => this.bells.ringAlways(bell),
      (e) => this.onFailure(e),
    );
    this.hosts = new HostPool(specs, {
      report: (m) => {
        this.absorb(m);
        if (m.gen !== -1) this.rounds.answered(m.hostIndex, m.gen);
      },
      sinkCommitted: (m) => this.sinkCommits.answered(m),
      failed: (e) => this.onFailure(e),
      hostEnded: (i) => {
        this.sinkCommits.hostEnded(i);
        this.rounds.hostEnded();
      },
    });
  }

  /** Where generated source `i` schedules from: the first run's start, else this run's. */
  scheduleStart(sourceIndex: number): number {
    return this.recovery?.scheduleStarts[sourceIndex] ?? this.startTime;
  }

  /**
   * Per task, for metrics: how full its fullest input ring is now (read from the rings' shared
   * memory, no worker involved), and the time it has waited on full output rings this run (from its
   * last report).
   */
  taskGauges(): TaskGauge[] {
    const out: TaskGauge[] = [];
    for (const host of this.wiring.hosts) {
      for (const t of host.tasks) {
        let fill = 0;
        for (const ring of t.inputs) fill = Math.max(fill, ringFill(ring));
        const c = this.counters.get(t.index);
        out.push({
          task: t.index,
          stage: t.stage,
          partition: t.partition,
          worker: host.index,
          inputFill: fill,
          backpressureMs: c?.backpressureMs ?? 0,
          rowsIn: c?.rowsIn ?? 0,
          rowsOut: c?.rowsOut ?? 0,
        });
      }
    }
    return out.sort((a, b) => a.task - b.task);
  }

  /** The physical plan as data, with the worker each task runs on and the rings between them. */
  topology(): QueryTopology {
    const { plan, physical } = this.config;
    return {
      workers: this.hosts.count,
      udfWorkers: this.wiring.udfWorkers.length,
      stages: physical.stages.map((s) => ({
        id: s.id,
        partitions: s.partitions,
        operators: s.chain.map((op) => describeOperator(op)),
        inputs: s.inputs.map((i) =>
          i.kind === 'source'
            ? { kind: 'source' as const, description: i.source.spec.description, rings: s.partitions }
            : {
                kind: 'shuffle' as const,
                fromStage: i.fromStage,
                rings: physical.stages[i.fromStage]!.partitions * s.partitions,
              },
        ),
        output:
          s.output.kind === 'shuffle'
            ? {
                kind: 'shuffle' as const,
                toStage: s.output.toStage,
                key: describeKey(s.output.key),
                partitioning: s.output.partitioning,
              }
            : {
                kind: 'sink' as const,
                description: plan.definition.sink.description,
                outputMode: plan.definition.outputMode,
              },
      })),
      tasks: physical.tasks.map((t) => ({
        task: t.index,
        stage: t.stage,
        partition: t.partition,
        worker: this.wiring.taskHost[t.index]!,
      })),
    };
  }

  get hostCount(): number {
    return this.hosts.count;
  }

  /**
   * Starts every host and resolves once all of them have built the plan and are running.
   * `seed` puts the rows memory sources start with into their logs, before any thread starts.
   */
  async launch(startTimeoutMs: number, seed: (feeds: Feeds) => void = () => {}): Promise<void> {
    try {
      seed(this.feeds);
      await this.sideOutputs.open();
    } catch (e) {
      await this.shutdown();
      throw e;
    }
    if (this.recovery) this.feeds.resumeAt(this.recovery.startOffsets);
    try {
      const started = Promise.all([this.hosts.start(startTimeoutMs), this.udf.start(startTimeoutMs)]);
      // Another run took the checkpoint over (this one was paused past its lease): this one stops,
      // failing its start if it is still starting.
      this.checkpoint?.onLost((e) => this.fail(e));
      await started;
    } catch (e) {
      await this.abort();
      throw e;
    }
    const { clock } = this.config;
    if (clock.manual) this.unsubscribeClock = (clock as ManualClock).onChange(() => this.bells.ringAll());
    // The query's clock starts now that every worker runs (see STARTED_SLOT).
    this.startTime = clock.now();
    new Float64Array(this.control.buffer)[START_TIME_F64] = this.startTime;
    Atomics.store(this.control, STARTED_SLOT, 1);
    this.bells.ringAll();
    this.progress.start(this.startTime);
    this.pump.start();
    try {
      await this.recordScheduleStarts();
      const ckpt = this.checkpoint;
      await this.feeds.openExternal(
        (i) => (ckpt ? ckpt.sourceDir(i) : null),
        (e) => this.fail(e),
      );
    } catch (e) {
      await this.abort();
      throw e;
    }
    // A task that failed while the awaits above were pending ended this run (a restart may take
    // the checkpoint next): start no epochs, batches or timers that would outlive it.
    if (this.failure !== null || this.shutDown) return;
    const { trigger, plan } = { trigger: this.config.plan.definition.trigger, plan: this.config.plan };
    if (trigger.kind === 'realTime') {
      // An epoch whose offsets were written but not committed is redone over the same offsets.
      const redo = this.recovery?.redo;
      if (redo) {
        this.feeds.endEpochAt(redo.epoch, redo.ends);
        this.nextEpoch = redo.epoch + 1;
      }
      this.feeds.feedAll();
      this.scheduleProgress(this.startTime + this.config.options.progressIntervalMs);
      this.scheduleEpoch(this.startTime + trigger.checkpointIntervalMs, trigger.checkpointIntervalMs);
    } else {
      this.microBatch = new MicroBatchExecution(this, trigger, plan.watermarks.length > 0);
      this.microBatch.start();
    }
    if (trigger.kind === 'realTime' || trigger.kind === 'processingTime') {
      this.feeds.startPolling((e) => this.fail(e));
    }
  }

  /**
   * A first run remembers when each generated source's schedule began, so that a restart
   * generates the same rows at the same offsets.
   */
  private async recordScheduleStarts(): Promise<void> {
    const ckpt = this.checkpoint;
    if (ckpt === null) return;
    for (const s of this.config.plan.sources) {
      const generated = sourceConnector(s.spec).generated !== undefined;
      if (generated && this.recovery?.scheduleStarts[s.index] == null) {
        await ckpt.recordScheduleStart(s.index, this.startTime);
      }
    }
  }

  // --- micro-batch host ---------------------------------------------------------------------------

  async batchProgress(batchId: number, startedAt: number, durationMs: number): Promise<void> {
    this.reportingBatch = { batchId, startedAt, durationMs };
    try {
      await this.rounds.request(true);
    } finally {
      this.reportingBatch = null;
    }
  }

  requestStop(): void {
    if (!this.shutDown) this.listener.stopRequested();
  }

  fail(error: unknown): void {
    this.onFailure(
      error instanceof MillraceError
        ? error
        : new MillraceError(ErrorCode.TASK_FAILED, (error as Error).message ?? String(error), {
            cause: error,
          }),
    );
  }

  // --- commands ----------------------------------------------------------------------------------

  /**
   * Resolves once everything available now has reached the sink, and every epoch whose barrier was
   * sent before has committed (its files written, its sink commit done).
   */
  async processAllAvailable(): Promise<void> {
    if (this.microBatch !== null) return this.microBatch.processAllAvailable();
    if (this.feeds.hasExternal) {
      try {
        await this.feeds.refresh(true);
      } catch (e) {
        this.fail(e);
        throw e;
      }
    }
    const { id, done } = this.flushes.add(this.nextEpoch - 1);
    this.feeds.broadcast(FrameKind.FLUSH, id);
    return done;
  }

  /**
   * Graceful stop: end-of-stream from every source, then every task finishes the rows it was
   * sent — the last epoch, which commits them. If that takes longer than `timeoutMs` (a query far
   * behind its sources, rings full ahead of a slow sink), the last epoch is given up: the threads
   * end at once, and what it held is read again by the next run (nothing was committed of it).
   * Returns the epoch given up, or null. A later call with a shorter timeout cuts the wait short
   * ({@link hurryStop}).
   */
  async stop(timeoutMs: number): Promise<{ abandonedEpoch: number | null }> {
    this.microBatch?.stop();
    this.feeds.close();
    // A real-time run ends with an epoch of its own: what it processed is committed (and, with a
    // checkpoint, not redone by the next run).
    if (this.microBatch === null) this.feeds.broadcast(FrameKind.BARRIER, this.nextEpoch++);
    this.feeds.broadcast(FrameKind.END_OF_STREAM, 0);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.hosts.done.then(() => false),
      new Promise<boolean>((resolve) => {
        this.giveUp = () => resolve(true);
        timer = setTimeout(this.giveUp, timeoutMs);
        this.stopDeadline = Date.now() + timeoutMs;
      }),
    ]);
    clearTimeout(timer);
    this.giveUp = null;
    if (timedOut) {
      await this.abort();
      // Epochs complete by then were still committed (see shutdown); the first one left is given up.
      return { abandonedEpoch: this.coordinator.lastCommittedEpoch + 1 };
    }
    await this.shutdown();
    // A stop that could not write its last dead letters or late rows did not lose them quietly.
    await this.sideOutputs.close();
    return { abandonedEpoch: null };
  }

  /** A stop is under way: it gives the last epoch up within `timeoutMs` from now, if not sooner. */
  hurryStop(timeoutMs: number): void {
    const giveUp = this.giveUp;
    if (giveUp === null || Date.now() + timeoutMs >= this.stopDeadline) return;
    if (timeoutMs <= 0) giveUp();
    else {
      this.stopDeadline = Date.now() + timeoutMs;
      setTimeout(giveUp, timeoutMs);
    }
  }

  /** Stops at once: tasks leave their loops, workers are terminated. */
  async abort(): Promise<void> {
    Atomics.store(this.control, ABORT_SLOT, 1);
    this.bells.ringAll();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.hosts.done,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ABORT_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    await this.shutdown();
  }

  // --- failures and reports ----------------------------------------------------------------------

  private onFailure(error: MillraceError): void {
    // Sink commits waiting for hosts end with the run.
    this.sinkCommits.failAll(error);
    if (this.failure !== null) return;
    this.failure = error;
    if (this.hosts.failStart(error)) return;
    this.flushes.end(error);
    this.listener.failed(error);
  }

  private absorb(m: HostMessage & { type: 'report' }): void {
    for (const c of m.tasks) this.counters.set(c.index, c);
    this.latency.add(m.latency);
  }

  // --- progress and epochs -----------------------------------------------------------------------

  private scheduleProgress(at: number): void {
    this.timers.at(at, () => {
      void this.rounds.request(true);
      this.scheduleProgress(at + this.config.options.progressIntervalMs);
    });
  }

  private scheduleEpoch(at: number, interval: number): void {
    this.timers.at(at, () => {
      this.feeds.broadcast(FrameKind.BARRIER, this.nextEpoch++);
      this.scheduleEpoch(at + interval, interval);
    });
  }

  /** Resolves once every host has reported what it counted and recorded up to now. */
  collectMetrics(): Promise<void> {
    return this.rounds.request(false);
  }

  private settleFlushes(): void {
    this.flushes.settle(
      this.results.flushedUpTo(),
      this.coordinator.lastCommittedEpoch,
      this.results.allEnded,
    );
  }

  /** Releases every resource: pump, timers, ports, worker threads. Idempotent. */
  shutdown(): Promise<void> {
    // Every caller waits for the whole of it: a stop() that meets a shutdown a failure began
    // resolves only once the checkpoint is released and the threads are gone.
    this.shutdownDone ??= this.releaseAll();
    return this.shutdownDone;
  }

  private async releaseAll(): Promise<void> {
    this.shutDown = true;
    this.hosts.closingDown();
    this.feeds.close();
    this.timers.dispose();
    this.unsubscribeClock?.();
    // What the sinks wrote last is read before the rings go away.
    await this.pump.stop();
    // Epochs complete by now are committed; then the checkpoint is free for the next run.
    await this.coordinator.flushed();
    if (this.failure === null) await this.coordinator.logLastCommit();
    // What the side outputs received last is written before the query reports it ended.
    await this.sideOutputs.close().catch(() => {});
    await this.feeds.dispose();
    await this.checkpoint?.close();
    this.flushes.end(this.failure);
    await this.hosts.close();
    await this.udf.close();
    this.rounds.close();
  }
}
