import { ErrorCode, MillraceError } from '../errors.js';
import { SKEW_WARNING_MS } from './aggregate.js';
import { type FindMaxResult, type SearchSettings, searchMaxRate } from './find-max.js';
import { formatLatency, formatRate } from './format.js';
import { type MachineInfo, machineInfo } from './machine.js';
import { measureRun } from './measure.js';
import { type MillraceJob, type RunObserver, runMillraceJob } from './millrace-run.js';
import { measureRates, plotSubtitle, type RateResult, writeResult } from './scenario.js';
import { check, type TargetCheck } from './targets.js';
import type { BenchIO, CommonOptions, SystemName } from './types.js';

/**
 * What the Millrace-only latency scenarios (windowed-count, fraud, stream-static-join) share: a
 * benchmark job run at every rate `runs` times, then the optional --find-max search, the files,
 * and the targets the scenario names. Each scenario says what its job is and what it checks.
 */

/** The settings of a result: the command line, less where the output goes. */
export type ScenarioSettings<O extends CommonOptions> = Omit<O, 'json' | 'outDir'>;

export interface MillraceScenario<Name extends string> {
  scenario: Name;
  /** The query, in one line. */
  description: string;
  /** Why there is no baseline system. */
  baseline: string;
  job: MillraceJob;
  plotTitle(rate: number): string;
  /** Where --find-max starts, how long its probes may warm up, and its step (see SearchSettings). */
  search: Pick<SearchSettings, 'start' | 'maxWarmupMs' | 'step'>;
  /** The targets (docs/benchmarks.md) the figures are checked against (none: an empty list). */
  targets(rates: RateResult[], findMax: Partial<Record<SystemName, FindMaxResult>> | null): TargetCheck[];
}

export interface MillraceScenarioResult<Name extends string, O extends CommonOptions> {
  scenario: Name;
  description: string;
  baseline: string;
  machine: MachineInfo;
  settings: ScenarioSettings<O>;
  rates: RateResult[];
  findMax: Partial<Record<SystemName, FindMaxResult>> | null;
  targets: TargetCheck[];
  files: string[];
}

/**
 * Runs a Millrace-only scenario: every rate `runs` times, then the --find-max search; writes the
 * files (HDR per run, a plot per rate, the JSON result). Progress lines go to standard error.
 */
export async function runMillraceScenario<Name extends string, O extends CommonOptions>(
  s: MillraceScenario<Name>,
  o: O,
  io: BenchIO,
  signal: AbortSignal,
): Promise<MillraceScenarioResult<Name, O>> {
  const machine = machineInfo();
  const measure = (rate: number, warmupMs: number, durationMs: number) =>
    measureRun(io, () => runMillraceJob(s.job, { rate, warmupMs, durationMs, signal }));
  const { rates, files } = await measureRates(
    {
      scenario: s.scenario,
      rates: o.rates,
      runs: o.runs,
      systems: ['millrace'],
      outDir: o.outDir,
      measure: (_system, rate) => measure(rate, o.warmupMs, o.durationMs),
      plotTitle: s.plotTitle,
      plotSubtitle: plotSubtitle(o.runs, o.durationMs, o.warmupMs, machine),
    },
    io,
  );

  let findMax: Partial<Record<SystemName, FindMaxResult>> | null = null;
  if (o.findMax) {
    const millrace = await searchMaxRate(
      'Millrace',
      async (rate, warmupMs, durationMs) => (await measure(rate, warmupMs, durationMs)).run,
      { warmupMs: o.warmupMs, durationMs: o.durationMs, budgetMs: o.maxTimeMs, ...s.search },
      io,
    );
    findMax = { millrace };
  }

  const { json: _json, outDir: _outDir, ...settings } = o;
  return writeResult(
    s.scenario,
    o.outDir,
    {
      scenario: s.scenario,
      description: s.description,
      baseline: s.baseline,
      machine,
      settings,
      rates,
      findMax,
      targets: s.targets(rates, findMax),
      files,
    },
    io,
  );
}

/**
 * How long the stop of a run may take. A query far behind its generated source cannot stop
 * quickly: the stop's barrier sits at the offset due when `stop()` was called, and the query first
 * makes every row up to it. Its figures were taken before the stop, and they show the backlog.
 */
const STOP_TIMEOUT_MS = 10_000;

/** Takes a stop that timed out (its workers terminated) as part of the run, not as its failure. */
const ACCEPT_STOP_TIMEOUT: RunObserver = {
  started: () => {},
  window: () => {},
  stopped: (error) => error instanceof MillraceError && error.code === ErrorCode.QUERY_STOP_TIMEOUT,
};

/**
 * A benchmark job as the Millrace-only scenarios run it: its parameters plus `spinMicros` when
 * given; its sources and sinks on several threads (the spread of their clocks is reported); a
 * run that cannot stop within STOP_TIMEOUT_MS reports what it measured.
 */
export function benchJob(
  url: URL,
  o: Pick<CommonOptions, 'spinMicros'>,
  params: Record<string, string | number>,
): MillraceJob {
  return {
    url,
    params: o.spinMicros === undefined ? params : { ...params, spinMicros: o.spinMicros },
    clocks: 'threads',
    observer: ACCEPT_STOP_TIMEOUT,
    stopTimeoutMs: STOP_TIMEOUT_MS,
  };
}

/** A latency limit of a target: a percentile of the median run, at most `ms`. */
export interface LatencyLimit {
  percentile: 'p50' | 'p99' | 'p999';
  ms: number;
}

const PERCENTILE_LABEL: Record<LatencyLimit['percentile'], string> = {
  p50: 'p50',
  p99: 'p99',
  p999: 'p99.9',
};

/**
 * A latency target of a Millrace-only scenario, checked only at the rate it is defined at. When
 * the latency clocks of the query's threads differ by more than SKEW_WARNING_MS (clock-probe.ts),
 * each check notes it: an e2e figure of a row that changed threads is off by up to that much.
 */
export function latencyChecks(
  id: TargetCheck['id'],
  rates: readonly RateResult[],
  rate: number,
  limits: readonly LatencyLimit[],
): TargetCheck[] {
  const a = rates.find((r) => r.rate === rate)?.systems.millrace;
  if (a === undefined) return [];
  const checks = limits.map((l) =>
    check(
      id,
      `Millrace ${PERCENTILE_LABEL[l.percentile]} at ${formatRate(rate)} rows/s`,
      a.median[l.percentile],
      'ms',
      '<=',
      l.ms,
    ),
  );
  const spreads = a.runs.map((r) => r.clockSpreadMs).filter((s): s is number => typeof s === 'number');
  const spread = spreads.length > 0 ? Math.max(...spreads) : 0;
  if (spread > SKEW_WARNING_MS) {
    for (const c of checks) {
      c.note = `the worker threads' latency clocks differ by up to ${formatLatency(spread)}`;
    }
  }
  return checks;
}

/** A sustainable-throughput target, checked when --find-max ran. */
export function throughputChecks(
  id: TargetCheck['id'],
  findMax: Partial<Record<SystemName, FindMaxResult>> | null,
  target: number,
): TargetCheck[] {
  const best = findMax?.millrace?.best;
  if (best === undefined) return [];
  return [check(id, 'Millrace sustainable throughput', best, 'rows/s', '>=', target)];
}
