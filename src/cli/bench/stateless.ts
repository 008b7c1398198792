import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as hdr from 'hdr-histogram-js';
import type { CliIO } from '../io.js';
import { aggregate, SKEW_WARNING_MS, type SystemAggregate } from './aggregate.js';
import { type FindMaxResult, searchMax } from './find-max.js';
import { formatLatency, formatRate, formatSkew } from './format.js';
import { percentileCurve, renderLatencyPlot } from './latency-plot.js';
import { describeMachine, type MachineInfo, machineInfo } from './machine.js';
import { type Measured, measureOnce } from './measure.js';
import { parseDurationOption, parseNonNegative, parsePositiveInt, parseRate, UsageError } from './options.js';
import {
  check,
  E1_P50_MS,
  E1_P99_MS,
  E1_P999_MS,
  E1_RATE,
  E1_VS_BASELINE,
  T1_ROWS_PER_SECOND,
  type TargetCheck,
} from './targets.js';
import { SYSTEM_LABEL, SYSTEMS, type SystemName } from './types.js';

export type { SystemAggregate } from './aggregate.js';
export type { FindMaxResult } from './find-max.js';

export const STATELESS_DESCRIPTION =
  'generator (1 partition) → hash shuffle by card (1 thread hop) → filter → map → blackhole foreach sink, 2 workers';

const fusedDescription = (partitions: number) =>
  `generator (${partitions} partitions) → filter → map → blackhole foreach sink, fused: one task per partition, no thread hop`;

export const STATELESS_USAGE = `millrace bench stateless [options]

Constant-rate card payments through Millrace (${STATELESS_DESCRIPTION}), and the same work as a
postMessage worker pipeline at the same rate. Latency = emit time − each row's scheduled time.

  --rate N              rows per second (default 100000; 100k and 1.5M are accepted)
  --rates a,b,c         several rates, one after the other
  --duration D          measured window per run (default 10s)
  --warmup D            run time before the window, not measured (default 3s)
  --runs N              runs per rate and system, medians reported (default 1)
  --find-max            search the highest sustainable rate (T1) of each system
  --max-time D          time budget of --find-max (default 2min)
  --only SYSTEM         millrace or postmessage (default: both)
  --spin-micros N       Millrace workers poll this long before parking (default: the engine's)
  --fused [--partitions N]
                        Millrace without the thread hop: generator split over N partitions
                        (default 2), filter, map and sink fused in one task per partition
  --out DIR             where HDR percentile files and SVG plots go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

export interface StatelessOptions {
  rates: number[];
  durationMs: number;
  warmupMs: number;
  runs: number;
  findMax: boolean;
  maxTimeMs: number;
  systems: SystemName[];
  spinMicros: number | undefined;
  fused: boolean;
  partitions: number;
  outDir: string;
  json: boolean;
}

export interface RateResult {
  rate: number;
  systems: Partial<Record<SystemName, SystemAggregate>>;
}

export interface StatelessResult {
  scenario: 'stateless';
  description: string;
  machine: MachineInfo;
  settings: Omit<StatelessOptions, 'json' | 'outDir'>;
  rates: RateResult[];
  findMax: Partial<Record<SystemName, FindMaxResult>> | null;
  targets: TargetCheck[];
  files: string[];
}

export function parseStatelessArgs(args: string[]): StatelessOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        rate: { type: 'string' },
        rates: { type: 'string' },
        duration: { type: 'string' },
        warmup: { type: 'string' },
        runs: { type: 'string' },
        'find-max': { type: 'boolean' },
        'max-time': { type: 'string' },
        only: { type: 'string' },
        'spin-micros': { type: 'string' },
        fused: { type: 'boolean' },
        partitions: { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean' },
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const text = (k: string) => values[k] as string | undefined;
  const rateList = text('rates');
  const rate = text('rate');
  if (rate !== undefined && rateList !== undefined) throw new UsageError('give --rate or --rates, not both');
  const findMax = values['find-max'] === true;
  // Without a rate, --find-max runs alone; otherwise E1's rate.
  let rates: number[] = findMax ? [] : [E1_RATE];
  if (rateList !== undefined) rates = rateList.split(',').map((r) => parseRate(r, '--rates'));
  else if (rate !== undefined) rates = [parseRate(rate, '--rate')];
  const only = text('only');
  if (only !== undefined && !(SYSTEMS as readonly string[]).includes(only)) {
    throw new UsageError(`--only: expected ${SYSTEMS.join(' or ')}, got '${only}'`);
  }
  const durationMs = parseDurationOption(text('duration') ?? '10s', '--duration');
  if (durationMs <= 0) throw new UsageError('--duration must be positive');
  return {
    rates,
    durationMs,
    warmupMs: parseDurationOption(text('warmup') ?? '3s', '--warmup'),
    runs: parsePositiveInt(text('runs') ?? '1', '--runs'),
    findMax,
    maxTimeMs: parseDurationOption(text('max-time') ?? '2min', '--max-time'),
    systems: only === undefined ? [...SYSTEMS] : [only as SystemName],
    spinMicros:
      text('spin-micros') === undefined ? undefined : parseNonNegative(text('spin-micros')!, '--spin-micros'),
    fused: values.fused === true,
    partitions: parsePositiveInt(text('partitions') ?? '2', '--partitions'),
    outDir: text('out') ?? 'bench-out',
    json: values.json === true,
  };
}

/**
 * Runs the scenario: every rate for every system (`runs` times, the order of the systems
 * alternating between runs), then the --find-max search; writes the files; checks the targets.
 * Progress lines go to standard error.
 */
export async function runStateless(
  o: StatelessOptions,
  io: CliIO,
  signal: AbortSignal,
): Promise<StatelessResult> {
  const files: string[] = [];
  const outDir = resolve(o.outDir);
  await mkdir(outDir, { recursive: true });
  const rates: RateResult[] = [];
  for (const rate of o.rates) {
    const measured: Record<SystemName, Measured[]> = { millrace: [], postmessage: [] };
    for (let r = 0; r < o.runs; r++) {
      const order = r % 2 === 0 ? o.systems : [...o.systems].reverse();
      for (const system of order) {
        io.err(
          `stateless: ${SYSTEM_LABEL[system]} at ${formatRate(rate)} rows/s, run ${r + 1} of ${o.runs}\n`,
        );
        const m = await measureOnce(system, io, {
          rate,
          warmupMs: o.warmupMs,
          durationMs: o.durationMs,
          spinMicros: o.spinMicros,
          fused: o.fused,
          partitions: o.partitions,
          signal,
        });
        measured[system].push(m);
        const file = join(outDir, `stateless-${rate}-${system}-run${r + 1}.hgrm`);
        // Recorded in µs; the file is in ms, as HdrHistogram's plotters expect.
        await writeFile(file, m.histogram.outputPercentileDistribution(5, 1000));
        files.push(file);
      }
    }
    const systems: Partial<Record<SystemName, SystemAggregate>> = {};
    for (const system of o.systems) systems[system] = aggregate(measured[system].map((m) => m.run));
    rates.push({ rate, systems });
    const plot = join(outDir, `stateless-${rate}.svg`);
    await writeFile(plot, plotRate(rate, o, measured));
    files.push(plot);
  }

  let findMax: Partial<Record<SystemName, FindMaxResult>> | null = null;
  if (o.findMax) {
    findMax = {};
    const share = o.maxTimeMs / o.systems.length;
    for (const system of o.systems) findMax[system] = await searchMax(system, o, share, io, signal);
  }

  const result: StatelessResult = {
    scenario: 'stateless',
    description: o.fused ? fusedDescription(o.partitions) : STATELESS_DESCRIPTION,
    machine: machineInfo(),
    settings: {
      rates: o.rates,
      durationMs: o.durationMs,
      warmupMs: o.warmupMs,
      runs: o.runs,
      findMax: o.findMax,
      maxTimeMs: o.maxTimeMs,
      systems: o.systems,
      spinMicros: o.spinMicros,
      fused: o.fused,
      partitions: o.partitions,
    },
    rates,
    findMax,
    targets: [...e1Checks(rates), ...t1Checks(findMax)],
    files,
  };
  const json = join(outDir, 'stateless.json');
  await writeFile(json, `${JSON.stringify({ ...result, files: [...files, json] }, null, 2)}\n`);
  files.push(json);
  io.err(`stateless: done on ${describeMachine(result.machine)}\n`);
  return result;
}

function plotRate(rate: number, o: StatelessOptions, measured: Record<SystemName, Measured[]>): string {
  const colors: Record<SystemName, string> = { millrace: '#1f6fd1', postmessage: '#d1491f' };
  const series = o.systems.map((system) => {
    const runs = measured[system];
    // All runs at this rate merged into one distribution (a fresh histogram: it resizes to fit).
    const merged = hdr.build({ lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 });
    for (const m of runs) merged.add(m.histogram);
    const p99 = formatLatency(merged.getValueAtPercentile(99) / 1000);
    return {
      name: `${SYSTEM_LABEL[system]} (p99 ${p99})`,
      color: colors[system],
      points: percentileCurve(merged),
    };
  });
  const seconds = o.durationMs / 1000;
  return renderLatencyPlot(
    `Stateless, 1 thread hop, ${formatRate(rate)} rows/s: e2e latency by percentile`,
    `${o.runs} × ${seconds} s measured after ${o.warmupMs / 1000} s warm-up; ${describeMachine(machineInfo())}`,
    series,
  );
}

function e1Checks(rates: RateResult[]): TargetCheck[] {
  const at = rates.find((r) => r.rate === E1_RATE);
  const a = at?.systems.millrace;
  if (a === undefined) return [];
  const m = a.median;
  const checks = [
    check('E1', 'Millrace p50 at 100 k rows/s', m.p50, 'ms', '<=', E1_P50_MS),
    check('E1', 'Millrace p99 at 100 k rows/s', m.p99, 'ms', '<=', E1_P99_MS),
    check('E1', 'Millrace p99.9 at 100 k rows/s', m.p999, 'ms', '<=', E1_P999_MS),
  ];
  const c = a.corrected;
  if (a.clockSkewMs !== null && Math.abs(a.clockSkewMs) > SKEW_WARNING_MS && c !== null) {
    const keys = ['p50', 'p99', 'p999'] as const;
    checks.forEach((k, i) => {
      k.note = `includes a clock skew of ${formatSkew(a.clockSkewMs!)}; ${formatLatency(c[keys[i]!])} without it`;
    });
  }
  const b = at?.systems.postmessage?.median;
  if (b !== undefined && b.p99 > 0) {
    checks.push(check('E1', 'Millrace p99 / postMessage p99', m.p99 / b.p99, '×', '<=', E1_VS_BASELINE));
  }
  return checks;
}

function t1Checks(findMax: Partial<Record<SystemName, FindMaxResult>> | null): TargetCheck[] {
  const best = findMax?.millrace?.best;
  if (best === undefined) return [];
  return [check('T1', 'Millrace sustainable throughput', best, 'rows/s', '>=', T1_ROWS_PER_SECOND)];
}
