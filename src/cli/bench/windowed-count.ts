import type { CliIO } from '../io.js';
import { SKEW_WARNING_MS } from './aggregate.js';
import { type FindMaxResult, searchMaxRate } from './find-max.js';
import { formatCount, formatLatency, formatRate } from './format.js';
import { type MachineInfo, machineInfo } from './machine.js';
import { measureRun } from './measure.js';
import { type MillraceJob, runMillraceJob } from './millrace-run.js';
import { type CommonOptions, parseBenchArgs, parsePositiveInt } from './options.js';
import { DEFAULT_CARDS } from './payments.js';
import { measureRates, plotSubtitle, type RateResult, writeResult } from './scenario.js';
import { check, E2_P99_MS, E2_P999_MS, E2_RATE, T2_ROWS_PER_SECOND, type TargetCheck } from './targets.js';
import type { SystemName } from './types.js';

const JOB = new URL('./windowed-count-job.js', import.meta.url);

export const windowedCountDescription = (partitions: number, keys: number): string =>
  `generator (${partitions} partition${partitions === 1 ? '' : 's'}, ${formatCount(keys)} cards) → ` +
  "withWatermark('ts', 2 s) → hash shuffle by card (2 partitions) → " +
  "groupBy(window('ts', 1 s), cardId).agg(count), update mode → blackhole foreach sink, 2 workers";

export const WINDOWED_COUNT_BASELINE =
  'none: a postMessage pipeline has no equivalent of a keyed shuffle aggregation with watermarks ' +
  '(it would be a second engine, written for the benchmark), so this scenario measures Millrace only';

export const WINDOWED_COUNT_USAGE = `millrace bench windowed-count [options]

Constant-rate card payments through a keyed 1-s tumbling count in update mode (Millrace only:
${windowedCountDescription(2, DEFAULT_CARDS)}).
Every input row emits its group's new count; latency = emit time − the input row's scheduled time.

  --rate N              rows per second (default 100000; 100k and 1.5M are accepted)
  --rates a,b,c         several rates, one after the other
  --duration D          measured window per run (default 10s)
  --warmup D            run time before the window, not measured (default 4s: the first windows
                        close, and state reaches its steady size, ≈ 3 s after the start)
  --runs N              runs per rate, medians reported (default 1)
  --find-max            search the highest sustainable rate (T2)
  --max-time D          time budget of --find-max (default 2min)
  --keys N              distinct cards (default ${DEFAULT_CARDS}): the number of groups per window
  --partitions N        generator partitions (default 2)
  --spin-micros N       Millrace workers poll this long before parking (default: the engine's)
  --out DIR             where HDR percentile files and SVG plots go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

/**
 * The warm-up of a probe of --find-max. Longer than the stateless scenario's: the first window
 * closes ≈ 3 s after the start (1-s window, 2-s watermark delay), and until then state only grows.
 */
const PROBE_MAX_WARMUP_MS = 4000;
const DEFAULT_WARMUP = '4s';

export interface WindowedCountOptions extends CommonOptions {
  /** Distinct cards, so groups per window. */
  keys: number;
  /** Generator partitions. */
  partitions: number;
}

export interface WindowedCountResult {
  scenario: 'windowed-count';
  description: string;
  /** Why there is no baseline system. */
  baseline: string;
  machine: MachineInfo;
  settings: Omit<WindowedCountOptions, 'json' | 'outDir'>;
  rates: RateResult[];
  findMax: Partial<Record<SystemName, FindMaxResult>> | null;
  targets: TargetCheck[];
  files: string[];
}

export function parseWindowedCountArgs(args: string[]): WindowedCountOptions {
  const { common, values } = parseBenchArgs(
    args,
    { keys: { type: 'string' }, partitions: { type: 'string' } },
    { rate: E2_RATE, warmup: DEFAULT_WARMUP },
  );
  return {
    ...common,
    keys: parsePositiveInt((values.keys as string | undefined) ?? String(DEFAULT_CARDS), '--keys'),
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
  };
}

function job(o: WindowedCountOptions): MillraceJob {
  const params: Record<string, string | number> = { keys: o.keys, partitions: o.partitions };
  if (o.spinMicros !== undefined) params.spinMicros = o.spinMicros;
  return { url: JOB, params, clocks: 'threads' };
}

/**
 * Runs the scenario: every rate `runs` times, then the --find-max search; writes the files; checks
 * E2 and T2. Progress lines go to standard error.
 */
export async function runWindowedCount(
  o: WindowedCountOptions,
  io: CliIO,
  signal: AbortSignal,
): Promise<WindowedCountResult> {
  const machine = machineInfo();
  const spec = job(o);
  const measure = (rate: number, warmupMs: number, durationMs: number) =>
    measureRun(io, () => runMillraceJob(spec, { rate, warmupMs, durationMs, signal }));
  const { rates, files } = await measureRates(
    {
      scenario: 'windowed-count',
      rates: o.rates,
      runs: o.runs,
      systems: ['millrace'],
      outDir: o.outDir,
      measure: (_system, rate) => measure(rate, o.warmupMs, o.durationMs),
      plotTitle: (rate) =>
        `Keyed 1-s tumbling count, update mode, ${formatRate(rate)} rows/s: e2e latency by percentile`,
      plotSubtitle: plotSubtitle(o.runs, o.durationMs, o.warmupMs, machine),
    },
    io,
  );

  let findMax: Partial<Record<SystemName, FindMaxResult>> | null = null;
  if (o.findMax) {
    const millrace = await searchMaxRate(
      'Millrace',
      async (rate, warmupMs, durationMs) => (await measure(rate, warmupMs, durationMs)).run,
      {
        warmupMs: o.warmupMs,
        durationMs: o.durationMs,
        budgetMs: o.maxTimeMs,
        start: E2_RATE,
        maxWarmupMs: PROBE_MAX_WARMUP_MS,
        // Fine steps: the search may have to halve far below the start rate.
        step: 1000,
      },
      io,
    );
    findMax = { millrace };
  }

  return writeResult(
    'windowed-count',
    o.outDir,
    {
      scenario: 'windowed-count',
      description: windowedCountDescription(o.partitions, o.keys),
      baseline: WINDOWED_COUNT_BASELINE,
      machine,
      settings: {
        rates: o.rates,
        durationMs: o.durationMs,
        warmupMs: o.warmupMs,
        runs: o.runs,
        findMax: o.findMax,
        maxTimeMs: o.maxTimeMs,
        spinMicros: o.spinMicros,
        keys: o.keys,
        partitions: o.partitions,
      },
      rates,
      findMax,
      targets: [...e2Checks(rates), ...t2Checks(findMax)],
      files,
    } satisfies WindowedCountResult,
    io,
  );
}

function e2Checks(rates: RateResult[]): TargetCheck[] {
  const a = rates.find((r) => r.rate === E2_RATE)?.systems.millrace;
  if (a === undefined) return [];
  const checks = [
    check('E2', 'Millrace p99 at 100 k rows/s', a.median.p99, 'ms', '<=', E2_P99_MS),
    check('E2', 'Millrace p99.9 at 100 k rows/s', a.median.p999, 'ms', '<=', E2_P999_MS),
  ];
  const spreads = a.runs.map((r) => r.clockSpreadMs).filter((s): s is number => typeof s === 'number');
  const spread = spreads.length > 0 ? Math.max(...spreads) : 0;
  if (spread > SKEW_WARNING_MS) {
    for (const c of checks) {
      c.note = `the worker threads' latency clocks differ by up to ${formatLatency(spread)}`;
    }
  }
  return checks;
}

function t2Checks(findMax: Partial<Record<SystemName, FindMaxResult>> | null): TargetCheck[] {
  const best = findMax?.millrace?.best;
  if (best === undefined) return [];
  return [check('T2', 'Millrace sustainable throughput', best, 'rows/s', '>=', T2_ROWS_PER_SECOND)];
}
