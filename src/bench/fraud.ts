import { formatRate } from './format.js';
import {
  benchJob,
  latencyChecks,
  type MillraceScenarioResult,
  runMillraceScenario,
} from './millrace-scenario.js';
import { E4_P99_MS, E4_RATE } from './targets.js';
import type { BenchIO, CommonOptions } from './types.js';

const JOB = new URL('./fraud-job.js', import.meta.url);

export const fraudDescription = (partitions: number): string =>
  `generator (${partitions} partition${partitions === 1 ? '' : 's'}, the fraud demo's payments with injected fraud) → ` +
  "risk UDF → leftOuter join with the merchant-risk table → withWatermark('ts', 2 s) → " +
  'hash shuffle by card (2 partitions) → groupByKey(card).transformWithState(FraudDetector, event time: ' +
  'TTL state, timers) emitting one verdict per payment → blackhole foreach sink, 2 workers';

export const FRAUD_BASELINE =
  'none: a postMessage pipeline has no equivalent of per-key state with TTL and event-time timers ' +
  'behind a shuffle, so this scenario measures Millrace only';

/** Probes of --find-max warm up at most this long: their state is still growing. */
const PROBE_MAX_WARMUP_MS = 4000;

export interface FraudOptions extends CommonOptions {
  /** Generator partitions. */
  partitions: number;
}

export type FraudResult = MillraceScenarioResult<'fraud', FraudOptions>;

/** Runs the scenario (every rate `runs` times, then --find-max), writes the files, checks E4. */
export function runFraud(o: FraudOptions, io: BenchIO, signal: AbortSignal): Promise<FraudResult> {
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
