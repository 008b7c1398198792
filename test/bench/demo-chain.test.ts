import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import * as hdr from 'hdr-histogram-js';
import { aggregate } from '../../src/bench/aggregate.js';
import {
  type DemoChainVariantResult,
  demoChainTargets,
  firstSeconds,
  runDemoChain,
  withRatios,
} from '../../src/bench/demo-chain.js';
import { renderDemoChainReport } from '../../src/bench/demo-chain-report.js';
import type { SystemRun } from '../../src/bench/types.js';
import { UsageError } from '../../src/cli/bench/options.js';
import { fraudChain, parseDemoChainArgs } from '../../src/cli/bench/scenario-args.js';
import type { LatencySummary } from '../../src/metrics/latency.js';
import { assertEveryRowRecorded, assertLatency } from './assert-run.js';
import { NEVER, progressIO } from './progress-io.js';

const latency = (p99: number): LatencySummary => ({
  p50: p99 / 10,
  p90: p99 / 2,
  p99,
  p999: p99 * 2,
  p9999: p99 * 3,
  max: p99 * 4,
  count: 150_000,
  mean: p99 / 8,
});

function variant(name: DemoChainVariantResult['variant'], p99: number, firstP99: number) {
  const run: SystemRun = {
    system: 'millrace',
    rate: 5000,
    windowMs: 30_000,
    latency: latency(p99),
    throughput: 5000,
    backlog: { final: 0, max: 0, samples: [0], growth: 0 },
    sustainable: true,
    reasons: [],
    clockSkewMs: null,
    foreignCpuPercent: 0,
  };
  return { variant: name, whole: aggregate([run]), first: latency(firstP99) };
}

describe('the demo-chain benchmark (bench fraud --chain demo)', () => {
  it("runs the demo's whole query three ways from a cold start, and reports the first seconds apart", async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const io = progressIO();
      const result = await runDemoChain(
        {
          rates: [1000],
          durationMs: 2000,
          runs: 1,
          findMax: false,
          maxTimeMs: 60_000,
          partitions: 2,
          spinMicros: undefined,
          outDir: out,
          json: true,
        },
        io,
        NEVER,
      );
      assert.equal(result.scenario, 'demo-chain');
      assert.match(result.description, /dropDuplicatesWithinWatermark.*Arrow model.*transformWithState/);
      assert.equal(result.rates.length, 1);
      const variants = result.rates[0]!.variants;
      assert.deepEqual(
        variants.map((v) => v.variant),
        ['inline', 'isolated', 'no-model'],
      );
      for (const v of variants) {
        assertLatency(v.whole.median, v.variant);
        // Every payment is a row at the sink: the whole run, from the query's start, is measured.
        assertEveryRowRecorded(v.whole.runs[0]!, v.variant);
        assert.ok(
          v.first.count > 0 && v.first.count <= v.whole.median.count,
          `${v.variant}: the first seconds are part of the run (${v.first.count} of ${v.whole.median.count})`,
        );
      }
      assert.match(io.stderr(), /inline at 1 000 payments\/s, run 1 of 1, cold start/);
      const [inline, isolated, noModel] = variants;
      assert.ok(inline!.p99VsNoModel! > 0 && isolated!.p99VsNoModel! > 0, 'both placements beside no model');
      assert.equal(noModel!.p99VsNoModel, null);
      assert.deepEqual(result.targets, [], 'D1 and D2 are defined at 5 000 payments/s only');
      for (const v of ['inline', 'isolated', 'no-model'])
        assert.ok(existsSync(join(out, `demo-chain-1000-${v}-run1.hgrm`)), `${v}'s percentiles were written`);
      assert.ok(existsSync(join(out, 'demo-chain.json')));

      const report = renderDemoChainReport(result);
      assert.match(report, /^at 1 000 payments\/s/m);
      assert.match(report, /^inline +\d/m);
      assert.match(report, /^no-model +\d/m);
      assert.match(report, /first 5 s: p50/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('adds up the progress intervals of the first seconds', () => {
    const interval = (startMs: number, values: number[]) => {
      const histogram = hdr.build({ bitBucketSize: 32, autoResize: true, numberOfSignificantValueDigits: 3 });
      for (const v of values) histogram.recordValue(v);
      return { startMs, endMs: startMs + 1000, histogram };
    };
    const intervals = [0, 1000, 2000, 3000, 4000, 5000, 6000].map((t) =>
      interval(t, t < 5000 ? [1000, 2000] : [900_000]),
    );
    const first = firstSeconds(intervals, 5000);
    assert.equal(first.count, 10, 'five intervals of two rows');
    assert.equal(first.max, 2, 'the later, slower rows are not among them (ms)');
  });

  it("sets each placement's p99 beside the chain without the model, and checks D1–D3", () => {
    const variants = withRatios([
      variant('inline', 6, 30),
      variant('isolated', 12, 90),
      variant('no-model', 4, 10),
    ]);
    assert.deepEqual(
      variants.map((v) => [v.variant, v.p99VsNoModel, v.firstP99VsNoModel]),
      [
        ['inline', 1.5, 3],
        ['isolated', 3, 9],
        ['no-model', null, null],
      ],
    );
    const targets = demoChainTargets([{ rate: 5000, variants }], {
      inline: { best: 21_000, worst: 22_000, tried: [], warmupMs: 5000, durationMs: 2000 },
    });
    assert.deepEqual(
      targets.map((t) => [t.id, t.measured, t.pass]),
      [
        ['D1', 0.6, false],
        ['D1', 6, true],
        ['D1', 12, true],
        ['D2', 1.5, true],
        ['D2', 3, true],
        ['D3', 21_000, true],
      ],
    );
  });

  it("takes --chain demo on bench fraud's command line, and no warm-up", () => {
    assert.deepEqual(fraudChain(['--rate', '2000', '--chain', 'demo']), {
      chain: 'demo',
      rest: ['--rate', '2000'],
    });
    assert.equal(fraudChain(['--rate', '2000']).chain, 'detector');
    assert.throws(() => fraudChain(['--chain', 'all']), UsageError);
    const o = parseDemoChainArgs(['--rates', '5000,20000', '--duration', '10s']);
    assert.deepEqual([o.rates, o.durationMs, o.findMax], [[5000, 20_000], 10_000, false]);
    assert.deepEqual(
      parseDemoChainArgs(['--find-max']).rates,
      [5000],
      'the cold-start runs always have a rate',
    );
    assert.throws(() => parseDemoChainArgs(['--warmup', '3s']), /cold start/);
  });
});
