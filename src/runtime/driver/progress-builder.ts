import type { LatencyKind, LatencyQuantiles } from '../../metrics/latency.js';
import type {
  SourceProgress,
  StateOperatorProgress,
  StreamingQueryProgress,
} from '../../metrics/progress.js';
import { isoTime } from '../../util/event-time.js';
import type { TaskCounters } from '../messages.js';
import type { Feeds } from './feeds.js';
import type { RuntimeConfig } from './runtime-config.js';
import { watermarkHeldBack } from './watermark-held-back.js';

export interface ProgressInput {
  now: number;
  counters: ReadonlyMap<number, TaskCounters>;
  latency: Record<LatencyKind, LatencyQuantiles>;
  reportLatencyMs: number;
  epoch: number;
  /** Micro-batch mode: the batch's duration (else the interval since the last report). */
  durationMs?: number | undefined;
}

const ZERO: TaskCounters = {
  index: -1,
  sourceRows: 0,
  rowsIn: 0,
  rowsOut: 0,
  skipped: 0,
  deadLettered: 0,
  sourceOffset: 0,
  latestOffset: -1,
  epoch: 0,
  watermark: Number.NEGATIVE_INFINITY,
  state: null,
  eventTime: null,
  backpressureMs: 0,
  partitionWatermark: null,
};

/**
 * Turns workers' cumulative task counters into Spark-shaped progress objects: each report covers
 * the interval since the previous one (counts are differences, rates are per second of it).
 */
export class ProgressBuilder {
  private previous = new Map<number, TaskCounters>();
  private lastTime = 0;
  /** Task indices of each source, in partition order. */
  private readonly sourceTasks: { description: string; index: number; tasks: number[] }[];
  private readonly sinkTasks: number[];

  constructor(
    private readonly config: RuntimeConfig,
    private readonly feeds: Feeds,
  ) {
    const { physical } = config;
    this.sourceTasks = config.plan.sources.map((s) => {
      const stage = physical.stages.find((st) =>
        st.inputs.some((i) => i.kind === 'source' && i.source.index === s.index),
      )!;
      return {
        description: s.spec.description,
        index: s.index,
        tasks: physical.tasks.filter((t) => t.stage === stage.id).map((t) => t.index),
      };
    });
    this.sinkTasks = physical.tasks.filter((t) => t.stage === physical.sinkStage).map((t) => t.index);
  }

  /** The query's clock started: the first interval starts here. */
  start(startTime: number): void {
    this.lastTime = startTime;
  }

  /** One entry per stateful operator, summed over its partitions; counts are for the interval. */
  private stateOperators(
    counters: ReadonlyMap<number, TaskCounters>,
    prev: (i: number) => TaskCounters,
  ): StateOperatorProgress[] {
    const byOperator = new Map<number, StateOperatorProgress>();
    for (const [i, c] of counters) {
      const s = c.state;
      if (s === null) continue;
      const before = prev(i).state;
      let p = byOperator.get(s.operatorId);
      if (p === undefined) {
        p = {
          operatorName: s.operatorName,
          numRowsTotal: 0,
          numRowsUpdated: 0,
          numRowsRemoved: 0,
          numRowsDroppedByWatermark: 0,
          memoryUsedBytes: 0,
          commitTimeMs: 0,
          // Key groups of restored state not loaded yet (a lazy restore; 0 once every one is).
          customMetrics: { keyGroupsToLoad: 0 },
        };
        byOperator.set(s.operatorId, p);
      }
      p.numRowsTotal += s.numRowsTotal;
      p.numRowsUpdated += s.numRowsUpdated - (before?.numRowsUpdated ?? 0);
      p.numRowsRemoved += s.numRowsRemoved - (before?.numRowsRemoved ?? 0);
      p.numRowsDroppedByWatermark += s.numRowsDroppedByWatermark - (before?.numRowsDroppedByWatermark ?? 0);
      p.memoryUsedBytes += s.memoryUsedBytes;
      // Writes summed over the partitions, in the interval (Spark's commitTimeMs, per batch).
      p.commitTimeMs += Math.max(0, (s.commitTimeMs ?? 0) - (before?.commitTimeMs ?? 0));
      p.customMetrics.keyGroupsToLoad! += s.keyGroupsToLoad ?? 0;
      if (s.checkpointBytes !== undefined)
        p.customMetrics.checkpointBytesWritten =
          (p.customMetrics.checkpointBytesWritten ?? 0) +
          Math.max(0, s.checkpointBytes - (before?.checkpointBytes ?? 0));
      if (s.numDroppedDuplicateRows !== undefined)
        p.customMetrics.numDroppedDuplicateRows =
          (p.customMetrics.numDroppedDuplicateRows ?? 0) +
          s.numDroppedDuplicateRows -
          (before?.numDroppedDuplicateRows ?? 0);
    }
    return [...byOperator.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, p]) => ({ ...p, commitTimeMs: Math.round(p.commitTimeMs * 1000) / 1000 }));
  }

  /** Spark's eventTime: event times seen in the interval, and the watermark in force (ISO-8601). */
  private eventTime(counters: ReadonlyMap<number, TaskCounters>): Record<string, string> {
    if (this.config.plan.watermarks.length === 0) return {};
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    let sum = 0;
    let count = 0;
    let watermark = Number.NEGATIVE_INFINITY;
    for (const c of counters.values()) {
      if (c.eventTime !== null && c.eventTime.count > 0) {
        min = Math.min(min, c.eventTime.min);
        max = Math.max(max, c.eventTime.max);
        sum += c.eventTime.sum;
        count += c.eventTime.count;
      }
      if (c.state !== null) watermark = Math.max(watermark, c.watermark);
    }
    const out: Record<string, string> = {};
    if (count > 0) {
      out.avg = isoTime(Math.round(sum / count));
      out.max = isoTime(max);
      out.min = isoTime(min);
    }
    out.watermark = isoTime(Math.max(0, watermark));
    return out;
  }

  build(input: ProgressInput): StreamingQueryProgress {
    const { counters } = input;
    const interval = Math.max(0, input.now - this.lastTime);
    const duration = input.durationMs ?? interval;
    const seconds = (input.durationMs === undefined ? interval : input.durationMs) / 1000;
    const cur = (i: number) => counters.get(i) ?? ZERO;
    const prev = (i: number) => this.previous.get(i) ?? ZERO;
    const rate = (n: number) => (seconds > 0 ? n / seconds : 0);

    const sources: SourceProgress[] = this.sourceTasks.map((s) => {
      const startOffset: Record<string, number> = {};
      const endOffset: Record<string, number> = {};
      let latestOffset: Record<string, number> | null = {};
      let rows = 0;
      const driverLatest = this.feeds.sources[s.index]?.driver?.latestOffsets();
      s.tasks.forEach((task, p) => {
        startOffset[p] = Math.max(0, prev(task).sourceOffset);
        endOffset[p] = Math.max(0, cur(task).sourceOffset);
        rows += cur(task).sourceRows - prev(task).sourceRows;
        const latest = driverLatest ? driverLatest[p]! : cur(task).latestOffset;
        if (latest < 0) latestOffset = null;
        else if (latestOffset) latestOffset[p] = latest;
      });
      const held = watermarkHeldBack(s.tasks.map((task) => cur(task).partitionWatermark));
      const feedMetrics = this.feeds.sources[s.index]?.driver?.metrics?.();
      const metrics = held === null ? feedMetrics : { ...feedMetrics, ...held };
      return {
        description: s.description,
        startOffset,
        endOffset,
        latestOffset,
        numInputRows: rows,
        inputRowsPerSecond: rate(rows),
        processedRowsPerSecond: rate(rows),
        ...(metrics === undefined ? {} : { metrics }),
      };
    });
    const numInputRows = sources.reduce((n, s) => n + s.numInputRows, 0);
    let outputRows = 0;
    for (const t of this.sinkTasks) outputRows += cur(t).rowsOut - prev(t).rowsOut;
    let skipped = 0;
    let deadLettered = 0;
    let backpressure = 0;
    for (const [i, c] of counters) {
      skipped += c.skipped - prev(i).skipped;
      deadLettered += c.deadLettered - prev(i).deadLettered;
      backpressure += c.backpressureMs - prev(i).backpressureMs;
    }

    const stateOperators = this.stateOperators(counters, prev);
    const eventTime = this.eventTime(counters);

    this.previous = new Map(counters);
    this.lastTime = input.now;
    return {
      id: this.config.queryId,
      runId: this.config.runId,
      name: this.config.name,
      timestamp: new Date(input.now).toISOString(),
      batchId: input.epoch,
      batchDuration: duration,
      numInputRows,
      inputRowsPerSecond: rate(numInputRows),
      processedRowsPerSecond: rate(numInputRows),
      durationMs: {
        triggerExecution: duration,
        reportLatency: Math.round(input.reportLatencyMs * 1000) / 1000,
        backpressure: Math.round(backpressure * 1000) / 1000,
      },
      eventTime,
      stateOperators,
      sources,
      sink: { description: this.config.plan.definition.sink.description, numOutputRows: outputRows },
      latencyMs: input.latency,
      badRecords: { skipped, deadLettered },
    };
  }
}
