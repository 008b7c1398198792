import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as hdr from 'hdr-histogram-js';
import type { StreamingQueryProgress } from '../metrics/progress.js';
import { startQuery } from '../runtime/driver/start-query.js';
import type { StreamingQuery } from '../runtime/driver/streaming-query.js';
import { listenClockErrors } from './clock-probe.js';
import { judgeSustainable } from './sustainability.js';
import type { IntervalHistogram, MeasuredRun, RunSettings, RunWindow, StateStats } from './types.js';

const STATELESS_JOB = new URL('./stateless-job.js', import.meta.url);

/**
 * How a run turns the clock errors its job's threads report (clock-probe.ts) into figures:
 * `source-sink`, one source thread and one sink thread, gives the sink's clock minus the source's
 * (`clockSkewMs`); `threads`, sources and sinks on several threads, gives the spread of all their
 * clocks (`clockSpreadMs`).
 */
export type ClockFigures = 'source-sink' | 'threads';

/** A benchmark job: its module, its parameters (the rate is added), and how its clocks are read. */
export interface MillraceJob {
  url: URL;
  params: Record<string, string | number>;
  clocks: ClockFigures;
  /** Where the query keeps its checkpoint (`startQuery`'s `checkpointLocation`); none by default. */
  checkpointLocation?: string;
  /** Watches the run: the query once it started, and when the measured window begins and ends. */
  observer?: RunObserver;
  /**
   * The p99 under which a run counts as sustainable (default 10 ms, as for T1; Infinity: a bounded
   * backlog is enough — for queries that add latency on purpose, such as large Arrow batches).
   */
  p99LimitMs?: number;
  /** How long `stop()` may take (default: the engine's, 30 s). */
  stopTimeoutMs?: number;
  /** Before each run: more parameters for it (e.g. the fresh Kafka topics it uses). */
  prepare?(rate: number): Promise<Record<string, string | number>>;
  /** After each run, once its query stopped (e.g. stop a load generator, delete topics). */
  cleanup?(): Promise<void>;
}

/** What a scenario that needs more than latency, backlog and state sees of a run. */
export interface RunObserver {
  /** The query runs (before the warm-up). */
  started(q: StreamingQuery): void;
  /** The measured window begins (`start`) or ends (`end`). */
  window(phase: 'start' | 'end'): void;
  /**
   * The query stopped (`error` undefined), or its stop failed; called once after `started`. True
   * when the scenario takes the failed stop as a result of the run (it reports it) rather than as
   * the run's failure.
   */
  stopped(error: unknown): boolean;
}

/** One Millrace run of the stateless scenario. */
export function runMillrace(settings: RunSettings): Promise<MeasuredRun> {
  const params: Record<string, string | number> = {};
  if (settings.spinMicros !== undefined) params.spinMicros = settings.spinMicros;
  if (settings.fused) {
    params.fused = 'true';
    params.partitions = settings.partitions;
  }
  return runMillraceJob({ url: STATELESS_JOB, params, clocks: 'source-sink' }, settings);
}

/**
 * One Millrace run of a benchmark job: starts the query at a constant rate (parameter
 * `rowsPerSecond`), lets it warm up (none: the window starts with the query), then measures a window — e2e latency from the engine's own
 * histograms (recorded at the sink in the worker, from each row's scheduled time), backlog and
 * state from the progress reports — and stops it. The job reports its threads' latency clocks on
 * the BroadcastChannel named by its `clockChannel` parameter.
 */
export async function runMillraceJob(job: MillraceJob, window: RunWindow): Promise<MeasuredRun> {
  window.signal.throwIfAborted();
  const clockChannel = `millrace-bench-clock-${randomUUID()}`;
  const clocks = listenClockErrors(clockChannel);
  try {
    const extra = (await job.prepare?.(window.rate)) ?? {};
    const params = { ...job.params, ...extra, rowsPerSecond: window.rate, clockChannel };
    const q = await startQuery(job.url, {
      params,
      ...(job.checkpointLocation === undefined ? {} : { checkpointLocation: job.checkpointLocation }),
    });
    let measured: MeasuredRun;
    job.observer?.started(q);
    try {
      measured = await measure(q, window, job.observer, job.p99LimitMs);
    } finally {
      await stopRun(q, job);
    }
    if (job.clocks === 'source-sink') {
      const { source, sink } = clocks.errors;
      measured.run.clockSkewMs = source === undefined || sink === undefined ? null : sink - source;
    } else {
      const errors = [...clocks.threads.values()];
      measured.run.clockSpreadMs = errors.length === 0 ? null : Math.max(...errors) - Math.min(...errors);
    }
    return measured;
  } finally {
    clocks.close();
    await job.cleanup?.();
  }
}

/** Stops a run's query. A failed stop fails the run, unless the job's observer accepts it. */
async function stopRun(q: StreamingQuery, job: MillraceJob): Promise<void> {
  let stopError: unknown;
  try {
    await q.stop(job.stopTimeoutMs === undefined ? {} : { timeoutMs: job.stopTimeoutMs });
  } catch (e) {
    stopError = e ?? new Error('stop() failed');
  }
  const accepted = job.observer?.stopped(stopError) ?? false;
  if (stopError !== undefined && !accepted) throw stopError;
}

/** Sum of a progress offset map over its partitions. */
const total = (offsets: Record<string, number>): number => Object.values(offsets).reduce((a, b) => a + b, 0);

async function measure(
  q: StreamingQuery,
  settings: RunWindow,
  observer: RunObserver | undefined,
  p99LimitMs: number | undefined,
): Promise<MeasuredRun> {
  const { rate, signal } = settings;
  // A query that fails during the run ends the wait at once, with its error.
  const failed = q.awaitTermination().then(() => {
    throw new Error('the benchmark query ended before the run did');
  });
  failed.catch(() => {});
  const wait = (ms: number) => Promise.race([sleep(ms, undefined, { signal }), failed]);

  // Backlog = rows due at the source (all partitions) − rows accounted for since the start: emitted
  // at the sink, or dropped behind the watermark by a stateful operator. The benchmark queries emit
  // one row per input row otherwise (the stateless filter keeps every row; an update-mode count over
  // tumbling windows emits each row's new count). One sample per progress report.
  let accounted = 0;
  let measuring = false;
  let droppedInWindow = 0;
  const samples: number[] = [];
  const intervals: IntervalHistogram[] = [];
  let state: StateStats | undefined;
  const onProgress = (p: StreamingQueryProgress) => {
    const interval = q.intervalE2eHistogram();
    if (measuring && interval !== null) {
      const endMs = Date.parse(p.timestamp);
      intervals.push({ startMs: endMs - p.batchDuration, endMs, histogram: interval });
    }
    const op = p.stateOperators[0];
    accounted += p.sink.numOutputRows + (op?.numRowsDroppedByWatermark ?? 0);
    const source = p.sources[0];
    if (!measuring || source === undefined) return;
    const due = total(source.latestOffset ?? source.endOffset);
    samples.push(Math.max(0, due - accounted));
    if (op !== undefined) {
      droppedInWindow += op.numRowsDroppedByWatermark;
      state = {
        rows: op.numRowsTotal,
        maxRows: Math.max(state?.maxRows ?? 0, op.numRowsTotal),
        memoryBytes: op.memoryUsedBytes,
        maxMemoryBytes: Math.max(state?.maxMemoryBytes ?? 0, op.memoryUsedBytes),
        droppedLate: droppedInWindow,
        removed: (state?.removed ?? 0) + op.numRowsRemoved,
      };
    }
  };
  q.on('progress', onProgress);
  try {
    // No warm-up: the window is the whole run from the query's start, its first rows included.
    if (settings.warmupMs > 0) {
      await wait(settings.warmupMs);
      await q.collectMetrics();
      q.resetLatencySummary();
    }
    const windowStart = performance.now();
    measuring = true;
    observer?.window('start');
    await wait(settings.durationMs);
    await q.collectMetrics();
    const windowMs = performance.now() - windowStart;
    measuring = false;
    observer?.window('end');
    const latency = q.latencySummary().e2e;
    // A copy: the query's own histogram keeps growing with the reports of its last rows.
    const histogram = hdr.decodeFromCompressedBase64(
      hdr.encodeIntoCompressedBase64(q.e2eHistogram()),
      32,
      false,
    );
    const growth = Math.max(0, (rate * windowMs) / 1000 - latency.count - droppedInWindow);
    const finalBacklog = samples.at(-1) ?? null;
    const verdict = judgeSustainable({
      rate,
      p99Ms: latency.p99,
      count: latency.count,
      finalBacklog,
      backlogGrowth: growth,
      ...(p99LimitMs === undefined ? {} : { p99LimitMs }),
    });
    return {
      run: {
        system: 'millrace',
        rate,
        windowMs,
        latency,
        throughput: (latency.count * 1000) / windowMs,
        clockSkewMs: null,
        backlog: {
          final: finalBacklog,
          max: samples.length > 0 ? Math.max(...samples) : null,
          samples,
          growth,
        },
        ...verdict,
        ...(state === undefined ? {} : { state }),
      },
      histogram,
      intervals,
    };
  } finally {
    q.off('progress', onProgress);
  }
}
