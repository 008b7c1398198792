import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IdleResult } from '../../src/bench/idle.js';
import { BENCH_USAGE, runBench } from '../../src/cli/bench/index.js';
import {
  parseCheckpointArgs,
  parseFraudArgs,
  parseIdleArgs,
  parseKafkaLoopArgs,
  parseStatelessArgs,
  parseStreamStaticJoinArgs,
  parseWindowedCountArgs,
  splitKafkaArgs,
} from '../../src/cli/bench/scenario-args.js';
import { ExitCode } from '../../src/cli/io.js';
import { DEFAULT_CARDS } from '../../src/demo/payments.js';
import { fakeIO } from './fake-io.js';

/** The options every latency scenario shares, as parsed from an empty command line. */
const COMMON_DEFAULTS = {
  durationMs: 10_000,
  runs: 1,
  findMax: false,
  maxTimeMs: 120_000,
  spinMicros: undefined,
  outDir: 'bench-out',
  json: false,
};

describe('millrace bench: the command line', () => {
  it('lists the scenarios for --help, fraud and stream-static-join among them', async () => {
    const t = fakeIO();
    assert.equal(await runBench(['--help'], t.io), ExitCode.OK);
    assert.equal(t.stdout(), BENCH_USAGE);
    assert.match(BENCH_USAGE, /^ {2}fraud +E4/m);
    assert.match(BENCH_USAGE, /^ {2}stream-static-join$/m);
  });

  it('prints the options of each scenario for --help', async () => {
    for (const [scenario, options] of [
      ['stateless', [/--find-max/, /--kafka BROKERS/]],
      ['windowed-count', [/--keys/, /--find-max/, /--kafka BROKERS/]],
      ['fraud', [/--find-max/, /verdict/]],
      ['stream-static-join', [/--partitions/]],
      ['checkpoint', [/--interval/, /--restart-for/]],
      ['idle', [/--warmup/]],
      ['scale-out', [/--processes N/, /--kafka BROKERS/]],
      ['overload', [/--slowdown N/, /--sample D/]],
    ] as const) {
      const t = fakeIO();
      assert.equal(await runBench([scenario, '--help'], t.io), ExitCode.OK, scenario);
      for (const option of options) assert.match(t.stdout(), option, scenario);
    }
  });

  it('answers a wrong command line with the usage and exit status 2', async () => {
    for (const [args, usage] of [
      [[], /millrace bench <scenario>/],
      [['nope'], /unknown scenario 'nope'/],
      [['stateless', '--rate', 'fast'], /millrace bench stateless/],
      [['stateless', '--bogus'], /millrace bench stateless/],
      [['idle', '--duration', 'x'], /millrace bench idle/],
      [['windowed-count', '--keys', '0'], /millrace bench windowed-count/],
      [['windowed-count', '--keys', 'many'], /millrace bench windowed-count/],
      [['windowed-count', '--rate', '1k', '--rates', '2k'], /millrace bench windowed-count/],
      [['windowed-count', '--only', 'postmessage'], /millrace bench windowed-count/],
      [['fraud', '--partitions', '0'], /millrace bench fraud/],
      [['fraud', '--keys', '10'], /millrace bench fraud/],
      [['checkpoint', '--keys', '0'], /millrace bench checkpoint/],
      [['checkpoint', '--rates', '1k,2k'], /millrace bench checkpoint/],
      [['checkpoint', '--find-max'], /millrace bench checkpoint/],
      [['checkpoint', '--interval', '0s'], /millrace bench checkpoint/],
      [['checkpoint', '--only', 'postmessage'], /millrace bench checkpoint/],
      [['stateless', '--kafka', 'nohost'], /--kafka/],
      [['stateless', '--kafka', '127.0.0.1:9092', '--find-max'], /--find-max/],
    ] as const) {
      const t = fakeIO();
      assert.equal(await runBench([...args], t.io), ExitCode.USAGE, `millrace bench ${args.join(' ')}`);
      assert.match(t.stderr(), usage, `millrace bench ${args.join(' ')}`);
      assert.equal(t.stdout(), '');
    }
  });

  it('runs a scenario and prints its result as JSON with --json', async () => {
    const t = fakeIO();
    const code = await runBench(['idle', '--duration', '0.2s', '--warmup', '0s', '--json'], t.io);
    assert.equal(code, ExitCode.OK, t.stderr());
    const result = JSON.parse(t.stdout()) as IdleResult;
    assert.equal(result.scenario, 'idle');
    assert.deepEqual(
      result.targets.map((c) => c.id),
      ['I1'],
    );
  });
});

describe('millrace bench: the options of each scenario', () => {
  it('stateless defaults to E1: 100 k rows/s, both systems, one thread hop', () => {
    assert.deepEqual(parseStatelessArgs([]), {
      ...COMMON_DEFAULTS,
      rates: [100_000],
      warmupMs: 3000,
      systems: ['millrace', 'postmessage'],
      fused: false,
      partitions: 2,
    });
    const o = parseStatelessArgs([
      '--rates',
      '10k,1.5M',
      '--only',
      'millrace',
      '--fused',
      '--partitions',
      '4',
    ]);
    assert.deepEqual(
      [o.rates, o.systems, o.fused, o.partitions],
      [[10_000, 1_500_000], ['millrace'], true, 4],
    );
    assert.deepEqual(parseStatelessArgs(['--find-max']).rates, [], '--find-max alone measures no fixed rate');
  });

  it('windowed-count defaults to E2: 100 k rows/s over 100 000 cards, a 4-s warm-up', () => {
    assert.deepEqual(parseWindowedCountArgs([]), {
      ...COMMON_DEFAULTS,
      rates: [100_000],
      warmupMs: 4000,
      keys: DEFAULT_CARDS,
      partitions: 2,
    });
  });

  it('fraud defaults to E4: 50 k rows/s, a 20-s warm-up; stream-static-join to 10 k rows/s', () => {
    assert.deepEqual(parseFraudArgs([]), {
      ...COMMON_DEFAULTS,
      rates: [50_000],
      warmupMs: 20_000,
      partitions: 2,
    });
    assert.deepEqual(parseStreamStaticJoinArgs([]), {
      ...COMMON_DEFAULTS,
      rates: [10_000],
      warmupMs: 3000,
      partitions: 2,
    });
  });

  it('checkpoint defaults to E3 and C1: 100 k rows/s, 1 M cards, a checkpoint every second, a 10-s watermark delay', () => {
    const o = parseCheckpointArgs([]);
    assert.equal(o.rate, 100_000);
    assert.equal(o.keys, 1_000_000);
    assert.equal(o.intervalMs, 1000);
    assert.equal(o.delayMs, 10_000);
    assert.ok(o.warmupMs >= o.delayMs + 2000, 'the warm-up lets the state reach its steady size');
    assert.equal(o.durationMs, 20_000);
    assert.equal(o.runs, 1);
    assert.equal(o.restartForMs, 20_000);
    const p = parseCheckpointArgs([
      '--rate',
      '50k',
      '--keys',
      '2000',
      '--delay',
      '3s',
      '--interval',
      '500ms',
    ]);
    assert.deepEqual([p.rate, p.keys, p.delayMs, p.intervalMs], [50_000, 2000, 3000, 500]);
  });

  it('idle defaults to I1: a 20-s warm-up, a 10-s window', () => {
    assert.deepEqual(parseIdleArgs([]), { durationMs: 10_000, warmupMs: 20_000, json: false });
  });

  it('--kafka takes its own options out and defaults to K1 and K2: 10 k rows/s, 2 partitions', () => {
    assert.equal(splitKafkaArgs(['--rate', '5k']), null);
    const split = splitKafkaArgs(['--rate', '5k', '--kafka', 'a:1,b:2', '--kafka-partitions=3', '--json']);
    assert.deepEqual(split, {
      kafka: ['--kafka', 'a:1,b:2', '--kafka-partitions=3'],
      rest: ['--rate', '5k', '--json'],
    });
    const o = parseKafkaLoopArgs(split!.rest, split!.kafka);
    assert.deepEqual(
      [o.brokers, o.partitions, o.fetchMaxWaitMs, o.rates, o.json],
      [['a:1', 'b:2'], 3, 100, [5000], true],
    );
    const d = parseKafkaLoopArgs([], ['--kafka', 'localhost:9092']);
    assert.deepEqual([d.rates, d.warmupMs, d.partitions, d.keys], [[10_000], 4000, 2, DEFAULT_CARDS]);
  });
});
