import type { CliIO } from '../io.js';
import { formatRate } from './format.js';
import {
  benchJob,
  latencyChecks,
  type MillraceScenarioResult,
  runMillraceScenario,
} from './millrace-scenario.js';
import { type CommonOptions, parseBenchArgs, parsePositiveInt } from './options.js';
import { E4_P99_MS, E4_RATE } from './targets.js';

const JOB = new URL('./fraud-job.js', import.meta.url);

export const fraudDescription = (partitions: number): string =>
  `generator (${partitions} partition${partitions === 1 ? '' : 's'}, the fraud demo's payments with injected fraud) → ` +
  "risk UDF → leftOuter join with the merchant-risk table → withWatermark('ts', 2 s) → " +
  'hash shuffle by card (2 partitions) → groupByKey(card).transformWithState(FraudDetector, event time: ' +
  'TTL state, timers) emitting one verdict per payment → blackhole foreach sink, 2 workers';

export const FRAUD_BASELINE =
  'none: a postMessage pipeline has no equivalent of per-key state with TTL and event-time timers ' +
  'behind a shuffle, so this scenario measures Millrace only';

/**
 * The state reaches its steady size only once every clean card has paid (each pays once every
 * 20 s): the default warm-up covers that, so the window measures a detector with ≈ 20 × rate cards.
 */
const DEFAULT_WARMUP = '20s';
/** Probes of --find-max warm up at most this long: their state is still growing. */
const PROBE_MAX_WARMUP_MS = 4000;

export const FRAUD_USAGE = `millrace bench fraud [options]

E4: constant-rate card payments through the fraud demo's detector (Millrace only:
${fraudDescription(2)}).
Every payment emits one verdict row {cardId, alerts}; latency = emit time − the payment's scheduled
time, so it is recorded for every payment, not only for the few that raise an alert.

  --rate N              rows per second (default 50000; 50k and 1.5M are accepted)
  --rates a,b,c         several rates, one after the other
  --duration D          measured window per run (default 10s)
  --warmup D            run time before the window, not measured (default ${DEFAULT_WARMUP}: each clean
                        card pays once every 20 s, so the detector's state grows for 20 s)
  --runs N              runs per rate, medians reported (default 1)
  --find-max            search the highest sustainable rate (no target; probes warm up 4 s)
  --max-time D          time budget of --find-max (default 2min)
  --partitions N        generator partitions (default 2)
  --spin-micros N       Millrace workers poll this long before parking (default: the engine's)
  --out DIR             where HDR percentile files and SVG plots go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

export interface FraudOptions extends CommonOptions {
  /** Generator partitions. */
  partitions: number;
}

export type FraudResult = MillraceScenarioResult<'fraud', FraudOptions>;

export function parseFraudArgs(args: string[]): FraudOptions {
  const { common, values } = parseBenchArgs(
    args,
    { partitions: { type: 'string' } },
    { rate: E4_RATE, warmup: DEFAULT_WARMUP },
  );
  return {
    ...common,
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
  };
}

/** Runs the scenario (every rate `runs` times, then --find-max), writes the files, checks E4. */
export function runFraud(o: FraudOptions, io: CliIO, signal: AbortSignal): Promise<FraudResult> {
  return runMillraceScenario(
    {
      scenario: 'fraud',
      description: fraudDescription(o.partitions),
      baseline: FRAUD_BASELINE,
      job: benchJob(JOB, o, { partitions: o.partitions }),
      plotTitle: (rate) =>
        `Fraud detector (transformWithState, event-time timers), ${formatRate(rate)} rows/s: e2e latency by percentile`,
      search: { start: E4_RATE, maxWarmupMs: PROBE_MAX_WARMUP_MS, step: 1000 },
      targets: (rates) => latencyChecks('E4', rates, E4_RATE, [{ percentile: 'p99', ms: E4_P99_MS }]),
    },
    o,
    io,
    signal,
  );
}
