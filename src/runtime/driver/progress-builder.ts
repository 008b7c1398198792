import type { LatencyKind, LatencyQuantiles } from '../../metrics/latency.js';
import type { SourceProgress, StreamingQueryProgress } from '../../metrics/progress.js';
import type { TaskCounters } from '../messages.js';
import type { Feeds } from './feeds.js';
import type { RuntimeConfig } from './query-runtime.js';

export interface ProgressInput {
  now: number;
  counters: ReadonlyMap<number, TaskCounters>;
  latency: Record<LatencyKind, LatencyQuantiles>;
  reportLatencyMs: number;
  epoch: number;
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
  backpressureMs: 0,
};

/**
 * Turns workers' cumulative task counters into Spark-shaped progress objects: each report covers
 * the interval since the previous one (counts are differences, rates are per second of it).
 */
export class ProgressBuilder {
  private previous = new Map<number, TaskCounters>();
  private lastTime = 0;
  /** Task indices of each source, in partition order. */
  private readonly sourceTasks: { description: string; memory: string | undefined; tasks: number[] }[];
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
        memory: s.spec.kind === 'memory' ? s.spec.name : undefined,
        tasks: physical.tasks.filter((t) => t.stage === stage.id).map((t) => t.index),
      };
    });
    this.sinkTasks = physical.tasks.filter((t) => t.stage === physical.sinkStage).map((t) => t.index);
  }

  /** The query's clock started: the first interval starts here. */
  start(startTime: number): void {
    this.lastTime = startTime;
  }

  build(input: ProgressInput): StreamingQueryProgress {
    const { counters } = input;
    const duration = Math.max(0, input.now - this.lastTime);
    const seconds = duration / 1000;
    const cur = (i: number) => counters.get(i) ?? ZERO;
    const prev = (i: number) => this.previous.get(i) ?? ZERO;
    const rate = (n: number) => (seconds > 0 ? n / seconds : 0);

    const sources: SourceProgress[] = this.sourceTasks.map((s) => {
      const startOffset: Record<string, number> = {};
      const endOffset: Record<string, number> = {};
      let latestOffset: Record<string, number> | null = {};
      let rows = 0;
      const memoryLatest =
        s.memory !== undefined ? this.feeds.memorySource(s.memory)?.latestOffsets() : undefined;
      s.tasks.forEach((task, p) => {
        startOffset[p] = Math.max(0, prev(task).sourceOffset);
        endOffset[p] = Math.max(0, cur(task).sourceOffset);
        rows += cur(task).sourceRows - prev(task).sourceRows;
        const latest = memoryLatest ? memoryLatest[p]! : cur(task).latestOffset;
        if (latest < 0) latestOffset = null;
        else if (latestOffset) latestOffset[p] = latest;
      });
      return {
        description: s.description,
        startOffset,
        endOffset,
        latestOffset,
        numInputRows: rows,
        inputRowsPerSecond: rate(rows),
        processedRowsPerSecond: rate(rows),
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
      eventTime: {},
      stateOperators: [],
      sources,
      sink: { description: this.config.plan.definition.sink.description, numOutputRows: outputRows },
      latencyMs: input.latency,
      badRecords: { skipped, deadLettered },
    };
  }
}
