import type { CliIO } from '../io.js';
import { formatRate } from './format.js';
import { benchJob, type MillraceScenarioResult, runMillraceScenario } from './millrace-scenario.js';
import { type CommonOptions, parseBenchArgs, parsePositiveInt } from './options.js';

const JOB = new URL('./stream-static-join-job.js', import.meta.url);

/** The rate of the published anchor (Spark real-time mode's broadcast join). */
const DEFAULT_RATE = 10_000;

export const streamStaticJoinDescription = (partitions: number): string =>
  `generator (${partitions} partition${partitions === 1 ? '' : 's'}, the fraud demo's payments) → ` +
  'leftOuter join on merchant with the merchant-risk table (500 rows, loaded once per worker) → ' +
  'blackhole foreach sink; stateless, no shuffle: each partition runs fused in one task, 2 workers';

export const STREAM_STATIC_JOIN_BASELINE =
  'none run here. no target is set for this scenario; its published anchor is Spark ' +
  "real-time mode's broadcast join, p99 9 ms at 10 k rows/s (Kafka → Kafka; Flink 95 ms), " +
  'a different setup quoted for orientation only';

export const STREAM_STATIC_JOIN_USAGE = `millrace bench stream-static-join [options]

Constant-rate card payments joined with the merchant-risk table (Millrace only, no target:
${streamStaticJoinDescription(2)}).
Every payment emits its joined row; latency = emit time − the payment's scheduled time.

  --rate N              rows per second (default 10000, the rate of the published anchor)
  --rates a,b,c         several rates, one after the other
  --duration D          measured window per run (default 10s)
  --warmup D            run time before the window, not measured (default 3s)
  --runs N              runs per rate, medians reported (default 1)
  --find-max            search the highest sustainable rate
  --max-time D          time budget of --find-max (default 2min)
  --partitions N        generator partitions (default 2)
  --spin-micros N       Millrace workers poll this long before parking (default: the engine's)
  --out DIR             where HDR percentile files and SVG plots go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

export interface StreamStaticJoinOptions extends CommonOptions {
  /** Generator partitions. */
  partitions: number;
}

export type StreamStaticJoinResult = MillraceScenarioResult<'stream-static-join', StreamStaticJoinOptions>;

export function parseStreamStaticJoinArgs(args: string[]): StreamStaticJoinOptions {
  const { common, values } = parseBenchArgs(args, { partitions: { type: 'string' } }, { rate: DEFAULT_RATE });
  return {
    ...common,
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
  };
}

/** Runs the scenario (every rate `runs` times, then --find-max) and writes the files; no target. */
export function runStreamStaticJoin(
  o: StreamStaticJoinOptions,
  io: CliIO,
  signal: AbortSignal,
): Promise<StreamStaticJoinResult> {
  return runMillraceScenario(
    {
      scenario: 'stream-static-join',
      description: streamStaticJoinDescription(o.partitions),
      baseline: STREAM_STATIC_JOIN_BASELINE,
      job: benchJob(JOB, o, { partitions: o.partitions }),
      plotTitle: (rate) => `Stream–static join, ${formatRate(rate)} rows/s: e2e latency by percentile`,
      search: { start: 100_000 },
      targets: () => [],
    },
    o,
    io,
    signal,
  );
}
