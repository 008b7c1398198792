import { SKEW_WARNING_MS } from './aggregate.js';
import { type FindMaxResult, searchMaxRate } from './find-max.js';
import { formatLatency, formatRate, formatSkew } from './format.js';
import { type MachineInfo, machineInfo } from './machine.js';
import { measureOnce } from './measure.js';
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
import { type BenchIO, SYSTEM_LABEL, type SystemName } from './types.js';

export type { SystemAggregate } from './aggregate.js';
export type { FindMaxResult } from './find-max.js';
export type { RateResult } from './scenario.js';

export const STATELESS_DESCRIPTION =
  'generator (1 partition) → hash shuffle by card (1 thread hop) → filter → map → blackhole foreach sink, 2 workers';

const fusedDescription = (partitions: number) =>
  `generator (${partitions} partitions) → filter → map → blackhole foreach sink, fused: one task per partition, no thread hop`;

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

/**
 * Runs the scenario: every rate for every system (`runs` times, the order of the systems
 * alternating between runs), then the --find-max search; writes the files; checks the targets.
 * Progress lines go to standard error.
 */
export async function runStateless(
  o: StatelessOptions,
  io: BenchIO,
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

/** T1: the highest rate at which `system` of the stateless scenario is sustainable, within a time budget. */
function searchMax(
  system: SystemName,
  o: StatelessOptions,
  budgetMs: number,
  io: BenchIO,
  signal: AbortSignal,
): Promise<FindMaxResult> {
  return searchMaxRate(
    SYSTEM_LABEL[system],
    async (rate, warmupMs, durationMs) =>
      (
        await measureOnce(system, io, {
          rate,
          warmupMs,
          durationMs,
          spinMicros: o.spinMicros,
          fused: o.fused,
          partitions: o.partitions,
          signal,
        })
      ).run,
    { warmupMs: o.warmupMs, durationMs: o.durationMs, budgetMs, start: E1_RATE },
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
