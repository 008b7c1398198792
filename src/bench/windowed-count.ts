import { formatCount, formatRate } from './format.js';
import {
  benchJob,
  latencyChecks,
  type MillraceScenarioResult,
  runMillraceScenario,
  throughputChecks,
} from './millrace-scenario.js';
import { E2_P99_MS, E2_P999_MS, E2_RATE, T2_ROWS_PER_SECOND } from './targets.js';
import type { BenchIO, CommonOptions } from './types.js';

const JOB = new URL('./windowed-count-job.js', import.meta.url);

export const windowedCountDescription = (partitions: number, keys: number): string =>
  `generator (${partitions} partition${partitions === 1 ? '' : 's'}, ${formatCount(keys)} cards) → ` +
  "withWatermark('ts', 2 s) → hash shuffle by card (2 partitions) → " +
  "groupBy(window('ts', 1 s), cardId).agg(count), update mode → blackhole foreach sink, 2 workers";

export const WINDOWED_COUNT_BASELINE =
  'none: a postMessage pipeline has no equivalent of a keyed shuffle aggregation with watermarks ' +
  '(it would be a second engine, written for the benchmark), so this scenario measures Millrace only';

/**
 * The warm-up of a probe of --find-max. Longer than the stateless scenario's: the first window
 * closes ≈ 3 s after the start (1-s window, 2-s watermark delay), and until then state only grows.
 */
const PROBE_MAX_WARMUP_MS = 4000;

export interface WindowedCountOptions extends CommonOptions {
  /** Distinct cards, so groups per window. */
  keys: number;
  /** Generator partitions. */
  partitions: number;
}

export type WindowedCountResult = MillraceScenarioResult<'windowed-count', WindowedCountOptions>;

/**
 * Runs the scenario: every rate `runs` times, then the --find-max search; writes the files; checks
 * E2 and T2. Progress lines go to standard error.
 */
export function runWindowedCount(
  o: WindowedCountOptions,
  io: BenchIO,
  signal: AbortSignal,
): Promise<WindowedCountResult> {
  return runMillraceScenario(
    {
      scenario: 'windowed-count',
      description: windowedCountDescription(o.partitions, o.keys),
      baseline: WINDOWED_COUNT_BASELINE,
      job: benchJob(JOB, o, { keys: o.keys, partitions: o.partitions }),
      plotTitle: (rate) =>
        `Keyed 1-s tumbling count, update mode, ${formatRate(rate)} rows/s: e2e latency by percentile`,
      // Fine steps: the search may have to halve far below the start rate.
      search: { start: E2_RATE, maxWarmupMs: PROBE_MAX_WARMUP_MS, step: 1000 },
      targets: (rates, findMax) => [
        ...latencyChecks('E2', rates, E2_RATE, [
          { percentile: 'p99', ms: E2_P99_MS },
          { percentile: 'p999', ms: E2_P999_MS },
        ]),
        ...throughputChecks('T2', findMax, T2_ROWS_PER_SECOND),
      ],
    },
    o,
    io,
    signal,
  );
}
