import { runArrowUdf } from '../../bench/arrow-udf.js';
import { renderArrowUdfReport } from '../../bench/arrow-udf-report.js';
import { runCheckpointBench } from '../../bench/checkpoint.js';
import { renderCheckpointReport } from '../../bench/checkpoint-report.js';
import { runDemoChain } from '../../bench/demo-chain.js';
import { renderDemoChainReport } from '../../bench/demo-chain-report.js';
import { runFraud } from '../../bench/fraud.js';
import { runIdle } from '../../bench/idle.js';
import { type KafkaLoopKind, runKafkaLoop } from '../../bench/kafka-loop.js';
import {
  renderFraudReport,
  renderKafkaLoopReport,
  renderStreamStaticJoinReport,
  renderWindowedCountReport,
} from '../../bench/millrace-report.js';
import { renderOverloadReport, runOverload } from '../../bench/overload.js';
import { renderIdleReport, renderStatelessReport } from '../../bench/report.js';
import { renderScaleOutReport, runScaleOut } from '../../bench/scale-out.js';
import { runStateless } from '../../bench/stateless.js';
import { runStreamStaticJoin } from '../../bench/stream-static-join.js';
import { runWindowedCount } from '../../bench/windowed-count.js';
import { reportError, wantsStacks } from '../error-report.js';
import type { CliIO } from '../io.js';
import { ExitCode } from '../io.js';
import { UsageError } from './options.js';
import { OVERLOAD_USAGE, parseOverloadArgs } from './overload-args.js';
import { parseScaleOutArgs, SCALE_OUT_USAGE } from './scale-out-args.js';
import {
  ARROW_UDF_USAGE,
  CHECKPOINT_USAGE,
  DEMO_CHAIN_USAGE,
  FRAUD_USAGE,
  fraudChain,
  IDLE_USAGE,
  KAFKA_OPTIONS_USAGE,
  parseArrowUdfArgs,
  parseCheckpointArgs,
  parseDemoChainArgs,
  parseFraudArgs,
  parseIdleArgs,
  parseKafkaLoopArgs,
  parseStatelessArgs,
  parseStreamStaticJoinArgs,
  parseWindowedCountArgs,
  STATELESS_USAGE,
  STREAM_STATIC_JOIN_USAGE,
  splitKafkaArgs,
  WINDOWED_COUNT_USAGE,
} from './scenario-args.js';

export const BENCH_USAGE = `millrace bench <scenario> [options]

Scenarios:
  stateless   E1 latency at constant rates and T1 sustainable throughput (--find-max), beside a
              postMessage worker pipeline doing the same work; with --kafka brokers, K1: Kafka in
              the loop
  windowed-count
              E2 latency and T2 sustainable throughput (--find-max) of a keyed 1-s tumbling count
              with a shuffle, in update mode (Millrace only); with --kafka brokers, K2: Kafka in
              the loop
  fraud       E4 latency of the fraud demo's detector (risk UDF, merchant-risk join, a shuffle by
              card, transformWithState with TTL state and event-time timers), one verdict per
              payment (Millrace only); with --chain demo, D1–D3: the demo's whole query from a
              cold start, the model inline, isolated and left out
  stream-static-join
              latency of payments joined with the merchant-risk table, stateless and without a
              shuffle (Millrace only; no target)
  checkpoint  E3: windowed-count with ≈ 1 M groups of state, with and without a checkpoint every
              second; C1: the time a restart on that checkpoint takes to emit again
  idle        I1: CPU used by a query that receives no data
  arrow-udf   latency and sustainable throughput of a 16-feature dot product as an Arrow UDF by
              batch size (arrowMaxRecordsPerBatch 1 … 10 000), beside the same score per row
              (Millrace only, real-time mode; no target)
  overload    M1: a source 10 × faster than its sink: memory stays bounded, nothing is lost, the
              time backpressure held the source is reported
  scale-out   S1: a stateless job run by a group of processes (millrace run --group) against one
              process, Kafka at both ends (--kafka brokers)

millrace bench <scenario> --help shows the options of a scenario. Method and targets: docs/benchmarks.md.
`;

/** A scenario with Kafka in the loop (`--kafka brokers`): K1 or K2. */
async function runKafkaScenario(
  kind: KafkaLoopKind,
  args: { kafka: string[]; rest: string[] },
  io: CliIO,
  signal: AbortSignal,
): Promise<void> {
  const options = parseKafkaLoopArgs(args.rest, args.kafka);
  const result = await runKafkaLoop(kind, options, io, signal);
  io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderKafkaLoopReport(result));
}

interface Scenario {
  usage: string;
  /** The usage of a variant of the scenario its arguments name (`fraud --chain demo`). */
  usageFor?(args: string[]): string;
  run(args: string[], io: CliIO, signal: AbortSignal): Promise<void>;
}

const SCENARIOS: Record<string, Scenario> = {
  stateless: {
    usage: STATELESS_USAGE + KAFKA_OPTIONS_USAGE,
    async run(args, io, signal) {
      const kafka = splitKafkaArgs(args);
      if (kafka !== null) return runKafkaScenario('stateless', kafka, io, signal);
      const options = parseStatelessArgs(args);
      const result = await runStateless(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderStatelessReport(result));
    },
  },
  'windowed-count': {
    usage: WINDOWED_COUNT_USAGE + KAFKA_OPTIONS_USAGE,
    async run(args, io, signal) {
      const kafka = splitKafkaArgs(args);
      if (kafka !== null) return runKafkaScenario('count', kafka, io, signal);
      const options = parseWindowedCountArgs(args);
      const result = await runWindowedCount(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderWindowedCountReport(result));
    },
  },
  fraud: {
    usage: FRAUD_USAGE,
    usageFor: (args) => (fraudChain(args).chain === 'demo' ? DEMO_CHAIN_USAGE : FRAUD_USAGE),
    async run(args, io, signal) {
      const { chain, rest } = fraudChain(args);
      if (chain === 'demo') {
        const options = parseDemoChainArgs(rest);
        const result = await runDemoChain(options, io, signal);
        io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderDemoChainReport(result));
        return;
      }
      const options = parseFraudArgs(rest);
      const result = await runFraud(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderFraudReport(result));
    },
  },
  'stream-static-join': {
    usage: STREAM_STATIC_JOIN_USAGE,
    async run(args, io, signal) {
      const options = parseStreamStaticJoinArgs(args);
      const result = await runStreamStaticJoin(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderStreamStaticJoinReport(result));
    },
  },
  checkpoint: {
    usage: CHECKPOINT_USAGE,
    async run(args, io, signal) {
      const options = parseCheckpointArgs(args);
      const result = await runCheckpointBench(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderCheckpointReport(result));
    },
  },
  'arrow-udf': {
    usage: ARROW_UDF_USAGE,
    async run(args, io, signal) {
      const options = parseArrowUdfArgs(args);
      const result = await runArrowUdf(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderArrowUdfReport(result));
    },
  },
  overload: {
    usage: OVERLOAD_USAGE,
    async run(args, io, signal) {
      const options = parseOverloadArgs(args);
      const result = await runOverload(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderOverloadReport(result));
    },
  },
  'scale-out': {
    usage: SCALE_OUT_USAGE,
    async run(args, io, signal) {
      const options = parseScaleOutArgs(args);
      const result = await runScaleOut(options, io, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderScaleOutReport(result));
    },
  },
  idle: {
    usage: IDLE_USAGE,
    async run(args, io, signal) {
      const options = parseIdleArgs(args);
      const result = await runIdle(options, signal);
      io.out(options.json ? `${JSON.stringify(result, null, 2)}\n` : renderIdleReport(result));
    },
  },
};

/**
 * `millrace bench <scenario> ...`: runs a benchmark and prints its report. A missed target is a
 * result, not an error: the exit status is 0 unless the command line is wrong (2) or the run
 * failed or was interrupted (1).
 */
export async function runBench(args: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.err : io.out)(BENCH_USAGE);
    return name === undefined ? ExitCode.USAGE : ExitCode.OK;
  }
  const scenario = SCENARIOS[name];
  if (scenario === undefined) {
    io.err(
      `millrace bench: unknown scenario '${name}' (known: ${Object.keys(SCENARIOS).join(', ')})\n\n${BENCH_USAGE}`,
    );
    return ExitCode.USAGE;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    let usage = scenario.usage;
    try {
      usage = scenario.usageFor?.(rest) ?? usage;
    } catch {
      // A bad variant's name: the scenario's own usage.
    }
    io.out(usage);
    return ExitCode.OK;
  }
  const abort = new AbortController();
  const unsubscribe = io.onInterrupt(() => abort.abort());
  try {
    await scenario.run(rest, io, abort.signal);
    return ExitCode.OK;
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`millrace bench ${name}: ${e.message}\n\n${scenario.usage}`);
      return ExitCode.USAGE;
    }
    if (abort.signal.aborted) {
      io.err(`millrace bench ${name}: interrupted\n`);
      return ExitCode.QUERY_FAILED;
    }
    reportError(io, `millrace bench ${name}: failed: `, e, wantsStacks());
    return ExitCode.QUERY_FAILED;
  } finally {
    unsubscribe();
  }
}
