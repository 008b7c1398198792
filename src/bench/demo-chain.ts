import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { type LatencySummary, summarize } from '../metrics/latency.js';
import { endThreadReserves } from '../runtime/driver/long-task.js';
import { aggregate, foldSummaries, type SystemAggregate } from './aggregate.js';
import { type FindMaxResult, searchMaxRate } from './find-max.js';
import { formatRate, median } from './format.js';
import { type MachineInfo, machineInfo } from './machine.js';
import { type Measured, measureRun } from './measure.js';
import { runMillraceJob } from './millrace-run.js';
import { benchJob } from './millrace-scenario.js';
import { prepareOut, writeResult } from './scenario.js';
import { check, type TargetCheck } from './targets.js';
import type { BenchIO, IntervalHistogram } from './types.js';

const JOB = new URL('./demo-job.js', import.meta.url);

export const DEMO_CHAIN_DESCRIPTION =
  "the fraud demo's whole query: generator (2 partitions, the demo's payments) → watermark → " +
  'dropDuplicatesWithinWatermark(txId) → risk UDF → the Arrow model (fraudModel, batches ≤ 100) → ' +
  'merchant-risk join → by card: transformWithState(CardVerdicts, event time) → per card and 10-s ' +
  'window: sum, count, last (update mode) → blackhole foreach sink; real-time trigger, checkpoints every 5 s';

/**
 * The variants, measured one after the other in one run: the model on the task's thread (the
 * default), on the UDF pool (`isolateUdfs`), and the chain without the model's column.
 */
export const DEMO_CHAIN_VARIANTS = ['inline', 'isolated', 'no-model'] as const;
export type DemoChainVariant = (typeof DEMO_CHAIN_VARIANTS)[number];

/** The defaults of the command line. */
export const DEMO_CHAIN_RATE = 5000;
export const DEMO_CHAIN_DURATION = '30s';
/** The first seconds of a run, reported on their own: what a query started onto its rate shows first. */
export const DEMO_CHAIN_FIRST_MS = 5000;
/** D1: the whole run at 5 000 payments/s from a cold start, the model inline. */
export const D1_RATE = 5000;
export const D1_P50_MS = 0.5;
export const D1_P99_MS = 20;
export const D1_P999_MS = 50;
/** D2: the model's cost, as the chain's p99 over the chain without the model's, same run. */
export const D2_INLINE_RATIO = 1.5;
export const D2_ISOLATED_RATIO = 3;
/** D3: the chain, model inline, sustainable (and with p99 ≤ D1's) at this rate at least. */
export const D3_RATE = 20_000;
/** --find-max starts here, in steps of 1 000 rows/s; a probe is sustainable under D1's p99. */
export const DEMO_CHAIN_SEARCH_START = 10_000;
const PROBE_WARMUP_MS = 5000;

export interface DemoChainOptions {
  /** The constant rates (payments/s), each run from a cold start. */
  rates: number[];
  durationMs: number;
  runs: number;
  /** Search each variant's highest sustainable rate (probes warm up, then measure). */
  findMax: boolean;
  maxTimeMs: number;
  partitions: number;
  spinMicros: number | undefined;
  outDir: string;
  json: boolean;
}

export interface DemoChainVariantResult {
  variant: DemoChainVariant;
  /** The whole run, from the query's start: medians over the runs. */
  whole: SystemAggregate;
  /** The first {@link DEMO_CHAIN_FIRST_MS} of each run (its first progress intervals): medians. */
  first: LatencySummary;
  /** p99 of the whole run / the no-model variant's (null for it, or when it was not measured). */
  p99VsNoModel: number | null;
  /** The same for the first seconds. */
  firstP99VsNoModel: number | null;
}

export interface DemoChainRateResult {
  rate: number;
  variants: DemoChainVariantResult[];
}

export interface DemoChainResult {
  scenario: 'demo-chain';
  description: string;
  machine: MachineInfo;
  settings: Omit<DemoChainOptions, 'json' | 'outDir'> & { firstMs: number };
  rates: DemoChainRateResult[];
  findMax: Partial<Record<DemoChainVariant, FindMaxResult>> | null;
  targets: TargetCheck[];
  files: string[];
}

const JOB_PARAMS: Record<DemoChainVariant, Record<string, string>> = {
  inline: { model: 'true', isolate: 'false' },
  isolated: { model: 'true', isolate: 'true' },
  'no-model': { model: 'false', isolate: 'false' },
};

/**
 * The latency of a run's first `firstMs`: its progress intervals that ended by then (the
 * engine's per-interval histograms, µs), added up.
 */
export function firstSeconds(intervals: readonly IntervalHistogram[], firstMs: number): LatencySummary {
  const sum = hdr.build({ bitBucketSize: 32, autoResize: true, numberOfSignificantValueDigits: 3 });
  const start = intervals[0]?.startMs;
  // An interval ends up to a few ms after its nominal end; the slack keeps the fifth.
  for (const i of intervals) if (i.endMs - start! <= firstMs + 250) sum.add(i.histogram);
  return summarize(sum);
}

/** The ratios of the report, from the variants' own figures. Pure. */
export function withRatios(
  variants: readonly Omit<DemoChainVariantResult, 'p99VsNoModel' | 'firstP99VsNoModel'>[],
): DemoChainVariantResult[] {
  const base = variants.find((v) => v.variant === 'no-model');
  const ratio = (p99: number, of: number | undefined) =>
    of !== undefined && of > 0 && base !== undefined ? p99 / of : null;
  return variants.map((v) => ({
    ...v,
    p99VsNoModel: v === base ? null : ratio(v.whole.median.p99, base?.whole.median.p99),
    firstP99VsNoModel: v === base ? null : ratio(v.first.p99, base?.first.p99),
  }));
}

/** D1 (at its rate), D2 (the ratios there) and D3 (with --find-max), for what was measured. */
export function demoChainTargets(
  rates: readonly DemoChainRateResult[],
  findMax: DemoChainResult['findMax'],
): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const at = rates.find((r) => r.rate === D1_RATE)?.variants;
  const inline = at?.find((v) => v.variant === 'inline');
  if (inline !== undefined) {
    const m = inline.whole.median;
    const what = (p: string) => `model inline, whole run from a cold start: ${p} at 5 000 payments/s`;
    checks.push(
      check('D1', what('p50'), m.p50, 'ms', '<=', D1_P50_MS),
      check('D1', what('p99'), m.p99, 'ms', '<=', D1_P99_MS),
      check('D1', what('p99.9'), m.p999, 'ms', '<=', D1_P999_MS),
    );
    if (inline.p99VsNoModel !== null)
      checks.push(
        check('D2', 'model inline: p99 / no model', inline.p99VsNoModel, '×', '<=', D2_INLINE_RATIO),
      );
  }
  const isolated = at?.find((v) => v.variant === 'isolated');
  if (isolated?.p99VsNoModel != null)
    checks.push(
      check('D2', 'model isolated: p99 / no model', isolated.p99VsNoModel, '×', '<=', D2_ISOLATED_RATIO),
    );
  const best = findMax?.inline?.best;
  if (best !== undefined)
    checks.push(check('D3', 'model inline: sustainable with p99 < 20 ms', best, 'rows/s', '>=', D3_RATE));
  return checks;
}

/**
 * Runs the scenario: at every rate, each variant from a cold start (`runs` times, the variants'
 * order alternating between runs), then, with `findMax`, each variant's highest sustainable rate;
 * writes an HDR file per variant, rate and run, and the JSON result. Progress lines go to
 * standard error.
 */
export async function runDemoChain(
  o: DemoChainOptions,
  io: BenchIO,
  signal: AbortSignal,
): Promise<DemoChainResult> {
  const machine = machineInfo();
  const outDir = await prepareOut(o.outDir);
  const measure = async (v: DemoChainVariant, rate: number, warmupMs: number, durationMs: number) => {
    // Every run on new threads: a query started on the threads an earlier one returned would find
    // their code compiled already, and its first seconds would not be a cold start's.
    await endThreadReserves();
    return measureRun(io, () =>
      runMillraceJob(
        { ...benchJob(JOB, o, { partitions: o.partitions, ...JOB_PARAMS[v] }), p99LimitMs: D1_P99_MS },
        { rate, warmupMs, durationMs, signal },
      ),
    );
  };

  const files: string[] = [];
  const rates: DemoChainRateResult[] = [];
  for (const rate of o.rates) {
    const measured = new Map<DemoChainVariant, Measured[]>(DEMO_CHAIN_VARIANTS.map((v) => [v, []]));
    for (let r = 0; r < o.runs; r++) {
      const order = r % 2 === 0 ? DEMO_CHAIN_VARIANTS : [...DEMO_CHAIN_VARIANTS].reverse();
      for (const v of order) {
        io.err(`demo-chain: ${v} at ${formatRate(rate)} payments/s, run ${r + 1} of ${o.runs}, cold start\n`);
        const m = await measure(v, rate, 0, o.durationMs);
        measured.get(v)!.push(m);
        const file = join(outDir, `demo-chain-${rate}-${v}-run${r + 1}.hgrm`);
        // Recorded in µs; the file is in ms, as HdrHistogram's plotters expect.
        await writeFile(file, m.histogram.outputPercentileDistribution(5, 1000));
        files.push(file);
      }
    }
    rates.push({
      rate,
      variants: withRatios(
        DEMO_CHAIN_VARIANTS.map((v) => {
          const runs = measured.get(v)!;
          return {
            variant: v,
            whole: aggregate(runs.map((m) => m.run)),
            first: foldSummaries(
              runs.map((m) => firstSeconds(m.intervals ?? [], DEMO_CHAIN_FIRST_MS)),
              median,
            ),
          };
        }),
      ),
    });
  }

  let findMax: DemoChainResult['findMax'] = null;
  if (o.findMax) {
    findMax = {};
    const share = o.maxTimeMs / DEMO_CHAIN_VARIANTS.length;
    for (const v of DEMO_CHAIN_VARIANTS) {
      findMax[v] = await searchMaxRate(
        v,
        async (rate, warmupMs, durationMs) => (await measure(v, rate, warmupMs, durationMs)).run,
        {
          warmupMs: PROBE_WARMUP_MS,
          maxWarmupMs: PROBE_WARMUP_MS,
          durationMs: o.durationMs,
          budgetMs: share,
          start: DEMO_CHAIN_SEARCH_START,
          step: 1000,
        },
        io,
      );
    }
  }

  const { json: _json, outDir: _outDir, ...settings } = o;
  return writeResult(
    'demo-chain',
    o.outDir,
    {
      scenario: 'demo-chain' as const,
      description: DEMO_CHAIN_DESCRIPTION,
      machine,
      settings: { ...settings, firstMs: DEMO_CHAIN_FIRST_MS },
      rates,
      findMax,
      targets: demoChainTargets(rates, findMax),
      files,
    },
    io,
  );
}
