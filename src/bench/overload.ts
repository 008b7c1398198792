import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamingQueryProgress } from '../metrics/progress.js';
import { startQuery } from '../runtime/driver/start-query.js';
import { formatBytes, formatCount, formatRate } from './format.js';
import { describeMachine, type MachineInfo, machineInfo } from './machine.js';
import type { BenchIO } from './types.js';

const JOB = new URL('./overload-job.js', import.meta.url);

/** M1: how much the resident set may grow past its size at the end of the warm-up, in bytes. */
export const M1_RSS_GROWTH_BYTES = 64 * 2 ** 20;

export interface OverloadOptions {
  /** Rows a second the source makes (when it can). */
  rate: number;
  /** How many times faster the source is than the sink. */
  slowdown: number;
  durationMs: number;
  /** Not judged: the resident set settles (rings fill, the JIT warms up). */
  warmupMs: number;
  /** How often the resident set is sampled. */
  sampleMs: number;
  outDir: string;
  json: boolean;
}

export interface RssSample {
  /** Since the query started. */
  readonly atMs: number;
  readonly bytes: number;
}

export interface OverloadResult {
  readonly scenario: 'overload';
  readonly machine: MachineInfo;
  readonly options: OverloadOptions;
  /** The sink's capacity, rows a second (the rate ÷ the slowdown). */
  readonly sinkRate: number;
  /** Rows the source made, as the run's progress reports counted them. */
  readonly rowsIn: number;
  /** Rows that reached the sink (each recorded its latency there). */
  readonly rowsOut: number;
  /** Rows due by the source's schedule at the end and not made: the backlog, kept as offsets. */
  readonly backlogRows: number;
  /** Time the tasks waited for ring space, summed over tasks, ms. */
  readonly backpressureMs: number;
  readonly rss: readonly RssSample[];
  /** The resident set at the end of the warm-up, and the largest after it. */
  readonly rssAfterWarmup: number;
  readonly rssPeak: number;
  /** M1: nothing lost, and the resident set within {@link M1_RSS_GROWTH_BYTES} of its size after the warm-up. */
  readonly bounded: boolean;
  readonly lost: number;
  readonly pass: boolean;
}

const sum = (values: Iterable<number>) => {
  let s = 0;
  for (const v of values) s += v;
  return s;
};

/**
 * M1: a source `slowdown` times faster than its sink for `durationMs`. Backpressure must hold the
 * source back (its rows wait as offsets), the memory stay bounded, and every row made reach the
 * sink once the query stops.
 */
export async function runOverload(
  o: OverloadOptions,
  io: BenchIO,
  signal: AbortSignal,
): Promise<OverloadResult> {
  signal.throwIfAborted();
  const sinkRate = o.rate / o.slowdown;
  const costMicros = 1e6 / sinkRate;
  const q = await startQuery(JOB, { params: { rate: o.rate, costMicros }, metrics: false });
  const started = performance.now();
  const reports: StreamingQueryProgress[] = [];
  q.on('progress', (p: StreamingQueryProgress) => reports.push(p));
  const rss: RssSample[] = [];
  const total = o.warmupMs + o.durationMs;
  io.err(
    `overload: ${formatRate(o.rate)} rows/s into a sink of ${formatRate(sinkRate)} rows/s for ${total / 1000} s\n`,
  );
  try {
    const failed = q.awaitTermination().then(() => {
      throw new Error('the benchmark query ended before the run did');
    });
    failed.catch(() => {});
    for (let at = 0; at < total; at += o.sampleMs) {
      await Promise.race([new Promise((resolve) => setTimeout(resolve, o.sampleMs)), failed]);
      signal.throwIfAborted();
      rss.push({ atMs: performance.now() - started, bytes: process.memoryUsage.rss() });
    }
  } finally {
    await q.stop();
  }
  const elapsedS = (performance.now() - started) / 1000;
  const rowsIn = sum(reports.map((p) => p.numInputRows));
  const rowsOut = q.latencySummary().e2e.count;
  const afterWarmup = rss.filter((s) => s.atMs >= o.warmupMs);
  const rssAfterWarmup = afterWarmup[0]?.bytes ?? Number.NaN;
  const rssPeak = Math.max(...afterWarmup.map((s) => s.bytes));
  const lost = rowsIn - rowsOut;
  const bounded = rssPeak - rssAfterWarmup <= M1_RSS_GROWTH_BYTES;
  const result: OverloadResult = {
    scenario: 'overload',
    machine: machineInfo(),
    options: o,
    sinkRate,
    rowsIn,
    rowsOut,
    backlogRows: Math.max(0, Math.round(o.rate * elapsedS) - rowsIn),
    backpressureMs: sum(reports.map((p) => p.durationMs.backpressure)),
    rss,
    rssAfterWarmup,
    rssPeak,
    bounded,
    lost,
    pass: bounded && lost === 0,
  };
  mkdirSync(o.outDir, { recursive: true });
  writeFileSync(join(o.outDir, 'overload.json'), `${JSON.stringify(result, null, 2)}\n`);
  return result;
}

export function renderOverloadReport(r: OverloadResult): string {
  const o = r.options;
  const runS = (o.warmupMs + o.durationMs) / 1000;
  return `${[
    `millrace bench overload (M1): a rate source of ${formatRate(o.rate)} rows/s into a foreach sink that takes ${formatRate(r.sinkRate)} rows/s (${o.slowdown} × slower), through a ring between 2 workers, ${runS} s`,
    `machine: ${describeMachine(r.machine)}`,
    '',
    `rows made by the source  ${formatCount(r.rowsIn)} (${formatRate(r.rowsIn / runS)} rows/s: backpressure held it to the sink's pace)`,
    `rows that reached the sink  ${formatCount(r.rowsOut)}; lost ${formatCount(r.lost)}`,
    `backlog at the end  ${formatCount(r.backlogRows)} rows due and not made (kept as offsets, not in memory)`,
    `backpressure  ${(r.backpressureMs / 1000).toFixed(1)} s of task time waiting for ring space`,
    `resident set  ${formatBytes(r.rssAfterWarmup)} after the ${o.warmupMs / 1000} s warm-up, at most ${formatBytes(r.rssPeak)} after it (${r.rss.length} samples, every ${o.sampleMs} ms)`,
    '',
    `M1 (memory bounded: at most ${formatBytes(M1_RSS_GROWTH_BYTES)} over the size after the warm-up; nothing lost): ${r.pass ? 'pass' : 'FAIL'}`,
  ].join('\n')}\n`;
}
