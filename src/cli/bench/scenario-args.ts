/**
 * The command line of each scenario of `millrace bench`: its usage text, and the parser that turns
 * its arguments into the options the scenario runs with (src/bench/). A bad command line throws
 * {@link UsageError}.
 */

import { parseArgs } from 'node:util';
import {
  ARROW_UDF_BATCH_SIZES,
  ARROW_UDF_DESCRIPTION,
  ARROW_UDF_RATE,
  ARROW_UDF_SEARCH_CEILING,
  ARROW_UDF_SEARCH_START,
  type ArrowUdfOptions,
  PLACEMENTS,
  type Placement,
} from '../../bench/arrow-udf.js';
import type { CheckpointOptions } from '../../bench/checkpoint.js';
import {
  D1_P99_MS,
  DEMO_CHAIN_DESCRIPTION,
  DEMO_CHAIN_DURATION,
  DEMO_CHAIN_FIRST_MS,
  DEMO_CHAIN_RATE,
  type DemoChainOptions,
} from '../../bench/demo-chain.js';
import { formatRate } from '../../bench/format.js';
import { type FraudOptions, fraudDescription } from '../../bench/fraud.js';
import { IDLE_DESCRIPTION, type IdleOptions } from '../../bench/idle.js';
import type { KafkaLoopOptions } from '../../bench/kafka-loop.js';
import { STATELESS_DESCRIPTION, type StatelessOptions } from '../../bench/stateless.js';
import { type StreamStaticJoinOptions, streamStaticJoinDescription } from '../../bench/stream-static-join.js';
import {
  C1_RESTART_MS,
  E1_RATE,
  E2_RATE,
  E3_CHECKPOINT_INTERVAL_MS,
  E3_KEYS,
  E3_P99_RATIO,
  E3_RATE,
  E4_RATE,
  K_RATE,
} from '../../bench/targets.js';
import { SYSTEMS, type SystemName } from '../../bench/types.js';
import { type WindowedCountOptions, windowedCountDescription } from '../../bench/windowed-count.js';
import { DEFAULT_CARDS } from '../../demo/payments.js';
import { parseBenchArgs, parseDurationOption, parsePositiveInt, UsageError } from './options.js';

export const STATELESS_USAGE = `millrace bench stateless [options]

Constant-rate card payments through Millrace (${STATELESS_DESCRIPTION}), and the same work as a
postMessage worker pipeline at the same rate. Latency = emit time − each row's scheduled time.

  --rate N              rows per second (default 100000; 100k and 1.5M are accepted)
  --rates a,b,c         several rates, one after the other
  --duration D          measured window per run (default 10s)
  --warmup D            run time before the window, not measured (default 3s)
  --runs N              runs per rate and system, medians reported (default 1)
  --find-max            search the highest sustainable rate (T1) of each system
  --max-time D          time budget of --find-max (default 2min)
  --only SYSTEM         millrace or postmessage (default: both)
  --spin-micros N       Millrace workers poll this long before parking (default: the engine's)
  --fused [--partitions N]
                        Millrace without the thread hop: generator split over N partitions
                        (default 2), filter, map and sink fused in one task per partition
  --out DIR             where HDR percentile files and SVG plots go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

export function parseStatelessArgs(args: string[]): StatelessOptions {
  const { common, values } = parseBenchArgs(
    args,
    { only: { type: 'string' }, fused: { type: 'boolean' }, partitions: { type: 'string' } },
    { rate: E1_RATE },
  );
  const only = values.only as string | undefined;
  if (only !== undefined && !(SYSTEMS as readonly string[]).includes(only)) {
    throw new UsageError(`--only: expected ${SYSTEMS.join(' or ')}, got '${only}'`);
  }
  return {
    rates: common.rates,
    durationMs: common.durationMs,
    warmupMs: common.warmupMs,
    runs: common.runs,
    findMax: common.findMax,
    maxTimeMs: common.maxTimeMs,
    systems: only === undefined ? [...SYSTEMS] : [only as SystemName],
    spinMicros: common.spinMicros,
    fused: values.fused === true,
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
    outDir: common.outDir,
    json: common.json,
  };
}

export const KAFKA_OPTIONS_USAGE = `
With --kafka, the scenario runs with Kafka in the loop (K1 for stateless, K2 for windowed-count):
a producer thread writes payments at the rate to a fresh input topic (Kafka timestamp = scheduled
time), the query reads it with sources.kafka and writes its output with sinks.kafka to a fresh
output topic; latency = sink emit − the record's timestamp.

  --kafka BROKERS       host:port[,host:port] of a broker that can create topics
  --kafka-partitions N  partitions of the topics (default 2)
  --fetch-max-wait MS   the source's fetchMaxWait (default 100; lower it for brokers that do not
                        answer a fetch as soon as data arrives)
`;

/** Takes `--kafka` and its companions out of a scenario's arguments; null without `--kafka`. */
export function splitKafkaArgs(args: string[]): { kafka: string[]; rest: string[] } | null {
  const i = args.findIndex((a) => a === '--kafka' || a.startsWith('--kafka='));
  if (i < 0) return null;
  const kafka: string[] = [];
  const rest: string[] = [];
  const ours = new Set(['--kafka', '--kafka-partitions', '--fetch-max-wait']);
  for (let j = 0; j < args.length; j++) {
    const a = args[j]!;
    const name = a.split('=')[0]!;
    if (ours.has(name)) {
      kafka.push(a);
      if (!a.includes('=') && j + 1 < args.length) kafka.push(args[++j]!);
    } else {
      rest.push(a);
    }
  }
  return { kafka, rest };
}

export function parseKafkaLoopArgs(args: string[], kafkaArgs: string[]): KafkaLoopOptions {
  const { common } = parseBenchArgs(args, {}, { rate: K_RATE, warmup: '4s' });
  const value = (name: string): string | undefined => {
    for (let i = 0; i < kafkaArgs.length; i++) {
      const a = kafkaArgs[i]!;
      if (a === name) return kafkaArgs[i + 1];
      if (a.startsWith(`${name}=`)) return a.slice(name.length + 1);
    }
    return undefined;
  };
  const brokers = (value('--kafka') ?? '').split(',').filter((b) => b !== '');
  if (brokers.length === 0 || brokers.some((b) => !/^\S+:\d+$/.test(b))) {
    throw new UsageError(`--kafka: expected host:port[,host:port], got '${value('--kafka') ?? ''}'`);
  }
  if (common.findMax) throw new UsageError('--find-max does not run with --kafka');
  return {
    ...common,
    brokers,
    partitions: parsePositiveInt(value('--kafka-partitions') ?? '2', '--kafka-partitions'),
    fetchMaxWaitMs: parsePositiveInt(value('--fetch-max-wait') ?? '100', '--fetch-max-wait'),
    keys: DEFAULT_CARDS,
  };
}

/** The first window closes ≈ 3 s after the start (1-s window, 2-s watermark delay). */
const WINDOWED_COUNT_WARMUP = '4s';

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

export function parseWindowedCountArgs(args: string[]): WindowedCountOptions {
  const { common, values } = parseBenchArgs(
    args,
    { keys: { type: 'string' }, partitions: { type: 'string' } },
    { rate: E2_RATE, warmup: WINDOWED_COUNT_WARMUP },
  );
  return {
    ...common,
    keys: parsePositiveInt((values.keys as string | undefined) ?? String(DEFAULT_CARDS), '--keys'),
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
  };
}

/**
 * The state reaches its steady size only once every clean card has paid (each pays once every
 * 20 s): the default warm-up covers that, so the window measures a detector with ≈ 20 × rate cards.
 */
const FRAUD_WARMUP = '20s';

export const FRAUD_USAGE = `millrace bench fraud [options]

E4: constant-rate card payments through the fraud demo's detector (Millrace only:
${fraudDescription(2)}).
Every payment emits one verdict row {cardId, alerts}; latency = emit time − the payment's scheduled
time, so it is recorded for every payment, not only for the few that raise an alert.

  --rate N              rows per second (default 50000; 50k and 1.5M are accepted)
  --rates a,b,c         several rates, one after the other
  --duration D          measured window per run (default 10s)
  --warmup D            run time before the window, not measured (default ${FRAUD_WARMUP}: each clean
                        card pays once every 20 s, so the detector's state grows for 20 s)
  --runs N              runs per rate, medians reported (default 1)
  --find-max            search the highest sustainable rate (no target; probes warm up 4 s)
  --max-time D          time budget of --find-max (default 2min)
  --partitions N        generator partitions (default 2)
  --chain demo          the demo's whole query instead, model inline, isolated and left out, from
                        a cold start (millrace bench fraud --chain demo --help)
  --spin-micros N       Millrace workers poll this long before parking (default: the engine's)
  --out DIR             where HDR percentile files and SVG plots go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

export const DEMO_CHAIN_USAGE = `millrace bench fraud --chain demo [options]

The fraud demo's whole query, from a cold start, three ways in one run (Millrace only):
${DEMO_CHAIN_DESCRIPTION}.
Variants: inline (the model on the task's thread, the default), isolated (the model on the UDF
pool, isolateUdfs) and no-model (the chain without the model's column). Each run starts a new
query and measures all of it, its first seconds included; the report gives the whole run's
percentiles, the first ${DEMO_CHAIN_FIRST_MS / 1000} s on their own, and each p99 against no-model's.
Targets D1 (whole run at 5 000 payments/s, model inline), D2 (the ratios) and D3 (--find-max).

  --rate N              payments per second (default ${DEMO_CHAIN_RATE})
  --rates a,b,c         several rates, one after the other
  --duration D          each run, from the query's start (default ${DEMO_CHAIN_DURATION})
  --runs N              runs per variant and rate, medians reported (default 1)
  --find-max            also search each variant's highest rate with p99 < ${D1_P99_MS} ms (probes
                        warm up 5 s, then measure --duration, at most 2 s)
  --max-time D          time budget of --find-max, shared by the variants (default 3min)
  --partitions N        generator partitions (default 2)
  --spin-micros N       Millrace workers poll this long before parking (default: the engine's)
  --out DIR             where HDR percentile files and the JSON go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

/** `--chain demo` (the demo's whole query) or `--chain detector` (E4, the default). */
export function fraudChain(args: string[]): { chain: 'demo' | 'detector'; rest: string[] } {
  const rest: string[] = [];
  let chain: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--chain') chain = args[++i];
    else if (a.startsWith('--chain=')) chain = a.slice('--chain='.length);
    else rest.push(a);
  }
  if (chain !== undefined && chain !== 'demo' && chain !== 'detector')
    throw new UsageError(`--chain: expected 'demo' or 'detector', got '${chain ?? ''}'`);
  return { chain: chain === 'demo' ? 'demo' : 'detector', rest };
}

export function parseDemoChainArgs(args: string[]): DemoChainOptions {
  if (args.includes('--warmup') || args.some((a) => a.startsWith('--warmup=')))
    throw new UsageError('--chain demo measures each run from a cold start: it takes no --warmup');
  const { common, values } = parseBenchArgs(
    args,
    { partitions: { type: 'string' } },
    { rate: DEMO_CHAIN_RATE, duration: DEMO_CHAIN_DURATION },
  );
  const maxTime = values['max-time'] as string | undefined;
  return {
    // --find-max alone leaves no rate in the common options; the cold-start runs always have one.
    rates: common.rates.length === 0 ? [DEMO_CHAIN_RATE] : common.rates,
    durationMs: common.durationMs,
    runs: common.runs,
    findMax: common.findMax,
    maxTimeMs: parseDurationOption(maxTime ?? '3min', '--max-time'),
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
    spinMicros: common.spinMicros,
    outDir: common.outDir,
    json: common.json,
  };
}

export function parseFraudArgs(args: string[]): FraudOptions {
  const { common, values } = parseBenchArgs(
    args,
    { partitions: { type: 'string' } },
    { rate: E4_RATE, warmup: FRAUD_WARMUP },
  );
  return {
    ...common,
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
  };
}

/** The rate of the published anchor (Spark real-time mode's broadcast join). */
const STREAM_STATIC_JOIN_RATE = 10_000;

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

export function parseStreamStaticJoinArgs(args: string[]): StreamStaticJoinOptions {
  const { common, values } = parseBenchArgs(
    args,
    { partitions: { type: 'string' } },
    { rate: STREAM_STATIC_JOIN_RATE },
  );
  return {
    ...common,
    partitions: parsePositiveInt((values.partitions as string | undefined) ?? '2', '--partitions'),
  };
}

const CHECKPOINT_DELAY = '10s';
const CHECKPOINT_WARMUP = '15s';
const CHECKPOINT_DURATION = '20s';
const CHECKPOINT_RESTART_FOR = '20s';

export const CHECKPOINT_USAGE = `millrace bench checkpoint [options]

E3 and C1: the keyed 1-s tumbling count of windowed-count, with enough cards and a long enough
watermark delay that its state holds ≈ 1 M groups, run twice at the same constant rate: without a
checkpoint (E2's shape), then with Trigger.realTime(interval) and a checkpoint in a temporary
directory (removed afterwards). E3: p99 with the checkpoint ≤ ${E3_P99_RATIO} × p99 without. Then the
checkpointed query, stopped, starts again on its checkpoint. C1: from startQuery() to the first row
emitted at the sink ≤ ${C1_RESTART_MS / 1000} s.

  --rate N          rows per second (default ${E3_RATE}; 100k accepted)
  --keys N          distinct cards (default ${E3_KEYS})
  --delay D         watermark delay (default ${CHECKPOINT_DELAY}): windows are evicted this long after they
                    end, so the state holds ≈ delay + 1 windows of keys × (1 − e^(−rate/keys))
                    groups each (≈ 95 000 at 100 k rows/s over 1 M cards)
  --interval D      checkpoint interval of the checkpointed run (default ${E3_CHECKPOINT_INTERVAL_MS / 1000}s)
  --duration D      measured window of each run (default ${CHECKPOINT_DURATION})
  --warmup D        run time before the window, not measured (default ${CHECKPOINT_WARMUP}: the state
                    reaches its steady size ≈ delay + 2 s after the start)
  --runs N          rounds (default 1); medians reported, the runs' order alternating
  --restart-for D   the restarted query runs until it emitted, committed and caught up with the
                    rows due while it was down, or this long at most (default ${CHECKPOINT_RESTART_FOR})
  --spin-micros N   workers poll this long before parking (default: the engine's)
  --out DIR         where HDR percentile files, the plot and JSON go (default bench-out/)
  --json            print the result as JSON instead of tables
`;

export function parseCheckpointArgs(args: string[]): CheckpointOptions {
  const { common, values } = parseBenchArgs(
    args,
    {
      keys: { type: 'string' },
      delay: { type: 'string' },
      interval: { type: 'string' },
      'restart-for': { type: 'string' },
    },
    { rate: E3_RATE, warmup: CHECKPOINT_WARMUP, duration: CHECKPOINT_DURATION },
  );
  if (common.findMax) throw new UsageError('--find-max does not apply to this scenario');
  if (common.rates.length !== 1) throw new UsageError('give one rate (--rate), not several');
  const text = (k: string) => values[k] as string | undefined;
  const intervalMs = parseDurationOption(text('interval') ?? `${E3_CHECKPOINT_INTERVAL_MS}ms`, '--interval');
  if (intervalMs <= 0) throw new UsageError('--interval must be positive');
  return {
    rate: common.rates[0]!,
    keys: parsePositiveInt(text('keys') ?? String(E3_KEYS), '--keys'),
    delayMs: parseDurationOption(text('delay') ?? CHECKPOINT_DELAY, '--delay'),
    intervalMs,
    durationMs: common.durationMs,
    warmupMs: common.warmupMs,
    runs: common.runs,
    restartForMs: parseDurationOption(text('restart-for') ?? CHECKPOINT_RESTART_FOR, '--restart-for'),
    spinMicros: common.spinMicros,
    outDir: common.outDir,
    json: common.json,
  };
}

export const IDLE_USAGE = `millrace bench idle [options]

Starts a query whose source receives no data (${IDLE_DESCRIPTION}) and measures
the CPU time of the whole process, every thread included, as a share of one core (I1: ≤ 2 %).

  --duration D   measured window (default 10s)
  --warmup D     time after the start that is not measured (default 20s: in the first ≈ 20 s
                 V8 runs memory-reducing full collections in every thread, ≈ 30–40 ms each)
  --json         print the result as JSON
`;

export function parseIdleArgs(args: string[]): IdleOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: { duration: { type: 'string' }, warmup: { type: 'string' }, json: { type: 'boolean' } },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const durationMs = parseDurationOption((values.duration as string | undefined) ?? '10s', '--duration');
  if (durationMs <= 0) throw new UsageError('--duration must be positive');
  return {
    durationMs,
    warmupMs: parseDurationOption((values.warmup as string | undefined) ?? '20s', '--warmup'),
    json: values.json === true,
  };
}

const ARROW_UDF_DURATION = '5s';
const ARROW_UDF_MAX_TIME = '6min';

export const ARROW_UDF_USAGE = `millrace bench arrow-udf [options]

The latency and throughput of an Arrow UDF by batch size, in one run (Millrace only, real-time
mode): ${ARROW_UDF_DESCRIPTION}.
Variants: scalar (the dot product per row on the task thread, no Arrow), then one Arrow variant
per --batch-sizes entry (the query's arrowMaxRecordsPerBatch) and placement (--placements: on the
task's thread, arrow-<n>; on a UDF thread, arrow-<n>-isolated). Each variant runs at the constant
rate (p50, p99), then its highest sustainable rate is searched. Latency = emit time − each row's
scheduled time.

  --rate N              rows per second of the latency runs (default ${ARROW_UDF_RATE}; 10k is accepted)
  --batch-sizes a,b,c   arrowMaxRecordsPerBatch of the Arrow variants (default ${ARROW_UDF_BATCH_SIZES.join(',')})
  --duration D          measured window per run (default ${ARROW_UDF_DURATION})
  --warmup D            run time before the window, not measured (default 3s)
  --runs N              runs per variant, medians reported (default 1)
  --no-find-max         skip the search of the sustainable rates (latency at --rate only)
  --max-time D          time budget of the whole search, shared by the variants (default ${ARROW_UDF_MAX_TIME});
                        each search doubles from ${formatRate(ARROW_UDF_SEARCH_START)} rows/s up to ${formatRate(ARROW_UDF_SEARCH_CEILING)} rows/s at most,
                        then bisects
  --spin-micros N       workers poll this long before parking (default: the engine's)
  --placements a,b      where the Arrow variants run their UDF: inline (the task's thread), isolated
                        (a UDF thread, isolateUdfs), or both, each batch size once per placement
                        (default inline,isolated)
  --isolate             the same as --placements isolated
  --out DIR             where HDR percentile files, the SVG plot and JSON go (default bench-out/)
  --json                print the result as JSON instead of tables
`;

/** `inline,isolated`: where the Arrow variants run (`--isolate`: isolated only); both by default. */
export function parsePlacements(text: string | undefined, isolate: boolean): Placement[] {
  if (isolate && text !== undefined) throw new UsageError('give --placements or --isolate, not both');
  if (isolate) return ['isolated'];
  if (text === undefined) return [...PLACEMENTS];
  const out: Placement[] = [];
  for (const t of text.split(',').map((p) => p.trim())) {
    if (!PLACEMENTS.includes(t as Placement))
      throw new UsageError(
        `--placements: expected inline, isolated or both (inline,isolated), got '${text}'`,
      );
    if (!out.includes(t as Placement)) out.push(t as Placement);
  }
  return out;
}

/** `1,10,100`: distinct batch sizes from 1 to 1 000 000, in the order given. */
export function parseBatchSizes(text: string): number[] {
  const sizes = text.split(',').map((t) => t.trim());
  const out: number[] = [];
  for (const t of sizes) {
    const n = Number(t);
    if (t === '' || !Number.isInteger(n) || n < 1 || n > 1_000_000) {
      throw new UsageError(
        `--batch-sizes: expected integers from 1 to 1000000 such as 1,10,100, got '${text}'`,
      );
    }
    if (out.includes(n)) throw new UsageError(`--batch-sizes: ${n} is given twice`);
    out.push(n);
  }
  return out;
}

export function parseArrowUdfArgs(args: string[]): ArrowUdfOptions {
  const { common, values } = parseBenchArgs(
    args,
    {
      'batch-sizes': { type: 'string' },
      'no-find-max': { type: 'boolean' },
      placements: { type: 'string' },
      isolate: { type: 'boolean' },
    },
    { rate: ARROW_UDF_RATE, duration: ARROW_UDF_DURATION, warmup: '3s' },
  );
  const noFindMax = values['no-find-max'] === true;
  if (noFindMax && common.findMax) throw new UsageError('give --find-max or --no-find-max, not both');
  // --find-max alone leaves no rate in the common options; the latency runs always have one.
  const rates = common.rates.length === 0 ? [ARROW_UDF_RATE] : common.rates;
  if (rates.length !== 1) throw new UsageError('give one rate (--rate), not several');
  const text = values['batch-sizes'] as string | undefined;
  const maxTime = values['max-time'] as string | undefined;
  return {
    rate: rates[0]!,
    durationMs: common.durationMs,
    warmupMs: common.warmupMs,
    runs: common.runs,
    batchSizes: text === undefined ? [...ARROW_UDF_BATCH_SIZES] : parseBatchSizes(text),
    findMax: !noFindMax,
    maxTimeMs: parseDurationOption(maxTime ?? ARROW_UDF_MAX_TIME, '--max-time'),
    spinMicros: common.spinMicros,
    placements: parsePlacements(values.placements as string | undefined, values.isolate === true),
    outDir: common.outDir,
    json: common.json,
  };
}
