import type { CliIO } from '../io.js';
import { SKEW_WARNING_MS } from './aggregate.js';
import { type FindMaxResult, searchMax } from './find-max.js';
import { formatLatency, formatRate, formatSkew } from './format.js';
import { type MachineInfo, machineInfo } from './machine.js';
import { measureOnce } from './measure.js';
import { parseBenchArgs, parsePositiveInt, UsageError } from './options.js';
import { measureRates, plotSubtitle, type RateResult, writeResult } from './scenario.js';
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
import { SYSTEMS, type SystemName } from './types.js';

export type { SystemAggregate } from './aggregate.js';
export type { FindMaxResult } from './find-max.js';
export type { RateResult } from './scenario.js';

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
  const { common, values } = parseBenchArgs(
    args,
    { only: { type: 'string' }, fused: { type: 'boolean' }, partitions: { type: 'string' } },
    { rate: E1_RATE },
  );
  const only = values.only as string | undefined;
  if (only !== undefined && !(SYSTEMS as readonly string[]).includes(only)) {
    throw new UsageError(`--only: expected ${SYSTEMS.join(' or ')}, got '${only}'`);
  }
  return {
    rates: common.rates,
    durationMs: common.durationMs,
    warmupMs: common.warmupMs,
    runs: common.runs,
    findMax: common.findMax,
    maxTimeMs: common.maxTimeMs,
    systems: only === undefined ? [...SYSTEMS] : [only as SystemName],
    spinMicros: common.spinMicros,
    fused: values.fused === true,
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
    outDir: common.outDir,
    json: common.json,
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
  const machine = machineInfo();
  const { rates, files } = await measureRates(
    {
      scenario: 'stateless',
      rates: o.rates,
      runs: o.runs,
      systems: o.systems,
      outDir: o.outDir,
      measure: (system, rate) =>
        measureOnce(system, io, {
          rate,
          warmupMs: o.warmupMs,
          durationMs: o.durationMs,
          spinMicros: o.spinMicros,
          fused: o.fused,
          partitions: o.partitions,
          signal,
        }),
      plotTitle: (rate) => `Stateless, 1 thread hop, ${formatRate(rate)} rows/s: e2e latency by percentile`,
      plotSubtitle: plotSubtitle(o.runs, o.durationMs, o.warmupMs, machine),
    },
    io,
  );

  let findMax: Partial<Record<SystemName, FindMaxResult>> | null = null;
  if (o.findMax) {
    findMax = {};
    const share = o.maxTimeMs / o.systems.length;
    for (const system of o.systems) findMax[system] = await searchMax(system, o, share, io, signal);
  }

  return writeResult(
    'stateless',
    o.outDir,
    {
      scenario: 'stateless',
      description: o.fused ? fusedDescription(o.partitions) : STATELESS_DESCRIPTION,
      machine,
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
    } satisfies StatelessResult,
    io,
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
