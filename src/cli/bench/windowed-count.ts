import type { CliIO } from '../io.js';
import { formatCount, formatRate } from './format.js';
import {
  benchJob,
  latencyChecks,
  type MillraceScenarioResult,
  runMillraceScenario,
  throughputChecks,
} from './millrace-scenario.js';
import { type CommonOptions, parseBenchArgs, parsePositiveInt } from './options.js';
import { DEFAULT_CARDS } from './payments.js';
import { E2_P99_MS, E2_P999_MS, E2_RATE, T2_ROWS_PER_SECOND } from './targets.js';

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

export type WindowedCountResult = MillraceScenarioResult<'windowed-count', WindowedCountOptions>;

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

/**
 * Runs the scenario: every rate `runs` times, then the --find-max search; writes the files; checks
 * E2 and T2. Progress lines go to standard error.
 */
export function runWindowedCount(
  o: WindowedCountOptions,
  io: CliIO,
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
