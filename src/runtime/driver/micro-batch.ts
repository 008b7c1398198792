import type { CheckpointManager, RecoveryPoint } from '../../checkpoint/manager.js';
import { generatedRows } from '../../connectors/registry.js';
import { GeneratorSchedule } from '../../connectors/schedule.js';
import type { MicroBatchTrigger } from '../../plan/trigger.js';
import type { Clock } from '../time/clock.js';
import type { TimerQueue } from '../time/timer-queue.js';
import type { EpochCoordinator } from './epoch-coordinator.js';
import type { Feeds, SourceFeeds } from './feeds.js';

/** What the micro-batch executor needs from the runtime that hosts it. */
export interface MicroBatchHost {
  readonly feeds: Feeds;
  readonly coordinator: EpochCoordinator;
  readonly checkpoint: CheckpointManager | null;
  /** The offset log is written at commit (asynchronous progress tracking), not before each batch. */
  readonly asyncProgressTracking: boolean;
  readonly recovery: RecoveryPoint | null;
  readonly clock: Clock;
  readonly timers: TimerQueue;
  /** Where each source's generated schedule begins (the query's start, or the first run's). */
  scheduleStart(sourceIndex: number): number;
  /** Emits the progress of a finished batch. */
  batchProgress(batchId: number, startedAt: number, durationMs: number): Promise<void>;
  /** Ends the query gracefully (availableNow / once are done). */
  requestStop(): void;
  /** The query failed while planning a batch. */
  fail(error: unknown): void;
}

/**
 * Micro-batch execution on the long-running tasks: a batch is an epoch whose end the driver
 * chooses. For batch N the driver picks each source partition's end offset (what is available,
 * within rate limits), sends memory rows up to it, and writes `BATCH(N, end)` into every feed ring;
 * a source task reads up to `end` (a generator makes those rows) and passes `BARRIER(N)` on.
 * Stateful tasks hold their output until the barrier: then they emit what the batch's mode says,
 * using the watermark computed at the end of batch N−1, and report the watermark for batch N+1.
 * A batch with no new data runs when that watermark makes state emit or evict.
 */
export class MicroBatchExecution {
  private batchId = 0;
  /** End offsets of the last committed batch, per source, per partition. */
  private readonly committed: number[][];
  private readonly schedules: (GeneratorSchedule | null)[];
  private running: Promise<boolean> | null = null;
  private watermark = Number.NEGATIVE_INFINITY;
  /** The watermark the last batch ran with. */
  private ranWith = Number.NEGATIVE_INFINITY;
  private nextDue = Number.POSITIVE_INFINITY;
  /** The earliest processing-time timer of any task (a batch without data fires it). */
  private nextTimerDue = Number.POSITIVE_INFINITY;
  private stopped = false;
  private tickPending = false;
  private newDataQueued = false;
  private cancelWake: (() => void) | undefined;
  /** A batch the last run planned but did not commit: it runs first, as it was. */
  private redo: RecoveryPoint['redo'];

  constructor(
    private readonly host: MicroBatchHost,
    private readonly trigger: MicroBatchTrigger,
    private readonly watermarked: boolean,
  ) {
    const sources = host.feeds.sources;
    const resume = host.recovery;
    this.committed = sources.map((s, i) => s.writers.map((_, p) => resume?.startOffsets[i]?.[p] ?? 0));
    this.schedules = sources.map((s, i) => {
      const rows = generatedRows(s.spec);
      return rows === undefined ? null : new GeneratorSchedule(rows, host.scheduleStart(i));
    });
    this.batchId = resume?.nextEpoch ?? 0;
    this.redo = resume?.redo ?? null;
    if (resume !== null && resume.committedEpoch >= 0) {
      this.watermark = resume.nextBatchWatermarkMs;
      // If the last committed batch moved the watermark, the batch without data it owes runs now.
      this.ranWith = resume.lateWatermarkMs;
    }
  }

  /** Starts the trigger. */
  start(): void {
    switch (this.trigger.kind) {
      case 'processingTime':
        for (const s of this.host.feeds.sources) if (s.driver) s.driver.onData = () => this.onNewData();
        if (this.trigger.intervalMs > 0) this.every(this.host.clock.now() + this.trigger.intervalMs);
        else this.tick();
        return;
      case 'availableNow':
        void this.refreshed()
          .then(() => this.drain(this.available(), true))
          .then(() => this.host.requestStop());
        return;
      case 'once':
        void this.refreshed()
          .then(() => this.runBatch(false, this.available()))
          .then(() => this.host.requestStop());
        return;
    }
  }

  /** Runs batches until everything available now, and every batch the watermark owes, is done. */
  async processAllAvailable(): Promise<void> {
    await this.refreshed();
    await this.drain(this.available(), true);
  }

  /** Files and Kafka sources have looked for new data (a failure fails the query and plans nothing). */
  private async refreshed(): Promise<void> {
    if (!this.host.feeds.hasExternal) return;
    try {
      await this.host.feeds.refresh();
    } catch (e) {
      this.host.fail(e);
      this.stopped = true;
    }
  }

  stop(): void {
    this.stopped = true;
    this.cancelWake?.();
  }

  private every(at: number): void {
    this.host.timers.at(at, () => {
      if (this.stopped) return;
      this.tick();
      this.every(at + (this.trigger as { intervalMs: number }).intervalMs);
    });
  }

  /**
   * Interval 0: new rows start a batch once the code that added them yields, so that the rows
   * added in one go (several `addData` calls, to several partitions or sources) are one batch.
   */
  private onNewData(): void {
    if (this.trigger.kind !== 'processingTime' || this.trigger.intervalMs !== 0 || this.newDataQueued) return;
    this.newDataQueued = true;
    queueMicrotask(() => {
      this.newDataQueued = false;
      this.tick();
    });
  }

  /** A trigger fired: run a batch, or remember to run one when the current batch ends. */
  private tick(): void {
    if (this.stopped) return;
    if (this.running !== null) {
      this.tickPending = true;
      return;
    }
    void this.runBatch(true, this.available()).then((ran) => {
      const zero = this.trigger.kind === 'processingTime' && this.trigger.intervalMs === 0;
      if (this.tickPending || (zero && ran)) {
        this.tickPending = false;
        this.tick();
      } else if (zero) {
        this.wakeWhenDue();
      }
    });
  }

  /** Interval 0: come back when a generated source's next row, or a processing-time timer, is due. */
  private wakeWhenDue(): void {
    let due = this.nextTimerDue;
    for (const [s, schedule] of this.schedules.entries()) {
      if (schedule === null) continue;
      for (const offset of this.committed[s]!) due = Math.min(due, schedule.dueTime(offset));
    }
    if (due === Number.POSITIVE_INFINITY) return;
    this.cancelWake?.();
    this.cancelWake = this.host.timers.at(Math.ceil(due), () => this.tick());
  }

  /** Runs batches up to `target` offsets (rate limits apply), then the no-data batches owed. */
  private async drain(target: number[][], limit: boolean): Promise<void> {
    while (!this.stopped && (await this.runBatch(limit, target))) {}
  }

  /** Offsets available now, per source and partition. */
  private available(): number[][] {
    const now = this.host.clock.now();
    return this.host.feeds.sources.map((s, i) => {
      if (s.driver) return s.driver.latestOffsets();
      const due = this.schedules[i]!.dueCount(now);
      return s.writers.map(() => due);
    });
  }

  /**
   * Plans and runs one batch (waiting for one in flight first). Returns false when there was
   * nothing to do: no new data up to `target` and no batch owed to the watermark.
   */
  private async runBatch(limit: boolean, target: number[][]): Promise<boolean> {
    while (this.running !== null) await this.running;
    if (this.stopped) return false;
    const redo = this.redo;
    this.redo = null;
    const ends = redo !== null ? redo.ends.map((e) => [...e]) : this.plan(limit, target);
    const hasData = ends.some((e, s) => e.some((end, p) => end > this.committed[s]![p]!));
    // Spark's rule: a batch without data runs when the watermark moved (its operators judge late
    // rows by the previous batch's watermark, so the next batch with data then judges by this one),
    // or when it makes state emit or evict, or a processing-time timer is due.
    const owed =
      (this.watermarked && (this.watermark > this.ranWith || this.watermark >= this.nextDue)) ||
      this.host.clock.now() >= this.nextTimerDue;
    // A batch whose offsets are logged runs even without new rows (a real-time run killed after
    // logging an epoch that brought none): it must commit before the batches after it can run.
    if (!hasData && !owed && redo === null) return false;
    const run = this.execute(ends);
    this.running = run;
    try {
      return await run;
    } finally {
      this.running = null;
    }
  }

  private async execute(ends: number[][]): Promise<boolean> {
    const epoch = this.batchId;
    const startedAt = this.host.clock.now();
    this.ranWith = this.watermark;
    const t0 = performance.now();
    try {
      // Offsets are durable before the batch runs: a restart redoes exactly this batch. Under
      // asynchronous progress tracking they are written at commit, for some batches only.
      if (!this.host.asyncProgressTracking) {
        await this.host.checkpoint?.writeOffsets(epoch, ends, {
          batchWatermarkMs: this.watermark,
          batchTimestampMs: startedAt,
        });
      }
      this.host.feeds.endEpochAt(epoch, ends);
    } catch (e) {
      this.host.fail(e);
      return false;
    }
    const reports = await this.host.coordinator.whenCommitted(epoch);
    for (const [s, e] of ends.entries()) this.committed[s] = [...e];
    this.batchId++;
    if (reports.length > 0) {
      this.watermark = Math.max(this.watermark, ...reports.map((r) => r.watermark));
      this.nextDue = Math.min(...reports.map((r) => r.nextDue));
      this.nextTimerDue = Math.min(...reports.map((r) => r.nextTimerDue ?? Number.POSITIVE_INFINITY));
    }
    await this.host.batchProgress(epoch, startedAt, performance.now() - t0);
    return true;
  }

  /** End offsets of the next batch: what is available up to `target`, within rate limits. */
  private plan(limit: boolean, target: number[][]): number[][] {
    return this.host.feeds.sources.map((source, s) => {
      const start = this.committed[s]!;
      const goal = target[s]!.map((t, p) => Math.max(start[p]!, t));
      const max = limit ? source.spec.maxRowsPerTrigger : undefined;
      return max === undefined ? goal : limitRows(start, goal, max);
    });
  }
}

/**
 * Shares `max` rows over partitions in proportion to what each has available (Spark's
 * maxOffsetsPerTrigger), every partition with rows getting at least one while the budget lasts.
 */
export function limitRows(start: readonly number[], goal: readonly number[], max: number): number[] {
  const available = goal.map((g, p) => g - start[p]!);
  const total = available.reduce((a, b) => a + b, 0);
  if (total <= max) return [...goal];
  const take = available.map((a) => Math.floor((a * max) / total));
  let left = max - take.reduce((a, b) => a + b, 0);
  for (let p = 0; left > 0 && p < take.length; p++) {
    if (take[p]! < available[p]!) {
      take[p]!++;
      left--;
    }
  }
  return start.map((s, p) => s + take[p]!);
}

export type { SourceFeeds };
