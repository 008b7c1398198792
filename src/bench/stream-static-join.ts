import { formatRate } from './format.js';
import { benchJob, type MillraceScenarioResult, runMillraceScenario } from './millrace-scenario.js';
import type { BenchIO, CommonOptions } from './types.js';

const JOB = new URL('./stream-static-join-job.js', import.meta.url);

export const streamStaticJoinDescription = (partitions: number): string =>
  `generator (${partitions} partition${partitions === 1 ? '' : 's'}, the fraud demo's payments) → ` +
  'leftOuter join on merchant with the merchant-risk table (500 rows, loaded once per worker) → ' +
  'blackhole foreach sink; stateless, no shuffle: each partition runs fused in one task, 2 workers';

export const STREAM_STATIC_JOIN_BASELINE =
  'none run here. no target is set for this scenario; its published anchor is Spark ' +
  "real-time mode's broadcast join, p99 9 ms at 10 k rows/s (Kafka → Kafka; Flink 95 ms), " +
  'a different setup quoted for orientation only';

export interface StreamStaticJoinOptions extends CommonOptions {
  /** Generator partitions. */
  partitions: number;
}

export type StreamStaticJoinResult = MillraceScenarioResult<'stream-static-join', StreamStaticJoinOptions>;

/** Runs the scenario (every rate `runs` times, then --find-max) and writes the files; no target. */
export function runStreamStaticJoin(
  o: StreamStaticJoinOptions,
  io: BenchIO,
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
