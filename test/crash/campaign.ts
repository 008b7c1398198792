import { type CrashTestOptions, type CrashTestResult, crashTest } from './harness.js';
import { kafkaCrashTest } from './kafka-harness.js';

/** How one shape of query is crash-tested, for a number of kills. */
export interface CrashShape {
  readonly name: string;
  readonly describe: string;
  run(o: {
    kills: number;
    seed: number;
    maxRunMs: number;
    keep?: boolean;
    log?: (line: string) => void;
  }): Promise<CrashTestResult>;
}

const files = (
  name: string,
  describe: string,
  query: CrashTestOptions['query'],
  trigger: 'realTime' | 'processingTime',
  isolate = false,
): CrashShape => ({
  name,
  describe,
  run: (o) =>
    crashTest({
      kills: o.kills,
      trigger,
      query,
      isolate,
      seed: o.seed,
      files: query === 'generated' ? 0 : o.kills * 2,
      rowsPerFile: 400,
      maxRunMs: o.maxRunMs,
      finalTimeoutMs: 300_000,
      keep: o.keep,
      log: o.log,
    }),
});

const kafka = (
  name: string,
  describe: string,
  query: 'copy' | 'count',
  trigger: 'realTime' | 'microBatch',
): CrashShape => ({
  name,
  describe,
  run: (o) =>
    kafkaCrashTest({
      kills: o.kills,
      query,
      trigger,
      seed: o.seed,
      rowsPerRun: 400,
      maxRunMs: o.maxRunMs,
      finalTimeoutMs: 300_000,
      log: o.log,
    }),
});

/**
 * Every shape the crash campaign (`npm run crash-test`) kills: files → files, a generated source
 * → files (a sink whose steps wait on the file system), Kafka → Kafka exactly-once, and stateful
 * queries (a windowed count with a shuffle, transformWithState), in both execution modes.
 */
export const CRASH_SHAPES: readonly CrashShape[] = [
  files('rows', 'files → files, stateless (real-time)', 'rows', 'realTime'),
  files('arrow', "files → Arrow UDF on the task's thread → files (real-time)", 'arrow', 'realTime'),
  files('arrow-isolated', 'files → Arrow UDF on a UDF thread → files (real-time)', 'arrow', 'realTime', true),
  files('generated', 'rate source → files (real-time)', 'generated', 'realTime'),
  files('windows', 'files → windowed count → files (real-time, shuffle)', 'windows', 'realTime'),
  files('windows-microbatch', 'files → windowed count → files (micro-batch)', 'windows', 'processingTime'),
  files('state', 'files → transformWithState → files (real-time, shuffle)', 'state', 'realTime'),
  kafka('kafka', 'Kafka → Kafka exactly-once (real-time)', 'copy', 'realTime'),
  kafka('kafka-microbatch', 'Kafka → Kafka exactly-once (micro-batch)', 'copy', 'microBatch'),
  kafka(
    'kafka-count',
    'Kafka → windowed count → Kafka exactly-once (real-time, shuffle)',
    'count',
    'realTime',
  ),
];
