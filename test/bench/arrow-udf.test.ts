import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tableFromArrays } from 'apache-arrow';
import { aggregate } from '../../src/bench/aggregate.js';
import {
  type ArrowUdfResult,
  type ArrowUdfVariantResult,
  plotInput,
  runArrowUdf,
  variantsOf,
  withRatios,
} from '../../src/bench/arrow-udf.js';
import { FEATURE_COLUMNS, featureRow, scoreBatch, scoreRow } from '../../src/bench/arrow-udf-job.js';
import { renderArrowUdfPlot } from '../../src/bench/arrow-udf-plot.js';
import { renderArrowUdfReport } from '../../src/bench/arrow-udf-report.js';
import type { FindMaxResult } from '../../src/bench/find-max.js';
import type { SystemRun } from '../../src/bench/types.js';
import { axisScale, renderXyPlot } from '../../src/bench/xy-plot.js';
import { BENCH_USAGE, runBench } from '../../src/cli/bench/index.js';
import { UsageError } from '../../src/cli/bench/options.js';
import { parseArrowUdfArgs, parseBatchSizes } from '../../src/cli/bench/scenario-args.js';
import { ExitCode } from '../../src/cli/io.js';
import { fakeIO } from '../cli/fake-io.js';
import { assertLatency } from './assert-run.js';
import { NEVER, progressIO } from './progress-io.js';

/** A run with the given p50 and p99 (ms), as the aggregate of a variant sees it. */
function run(p50: number, p99: number): SystemRun {
  return {
    system: 'millrace',
    rate: 10_000,
    windowMs: 5000,
    latency: { count: 50_000, mean: p50, p50, p90: p50, p99, p999: p99, p9999: p99, max: p99 },
    throughput: 10_000,
    backlog: { final: 0, max: 0, samples: [0], growth: 0 },
    sustainable: p99 < 10,
    reasons: [],
    clockSkewMs: null,
    clockSpreadMs: 0,
    foreignCpuPercent: 0,
  };
}

const search = (best: number, worst: number | null): FindMaxResult => ({
  best,
  worst,
  tried: [
    { rate: 50_000, sustainable: true, attempts: 1, p99: 1, reasons: [], foreignCpuPercent: 0 },
    { rate: 100_000, sustainable: false, attempts: 2, p99: 20, reasons: ['slow'], foreignCpuPercent: 0 },
  ],
  warmupMs: 3000,
  durationMs: 2000,
});

function variant(
  batchSize: number | null,
  p50: number,
  p99: number,
  best: number | null,
  placement: 'inline' | 'isolated' = 'inline',
) {
  return {
    variant:
      batchSize === null ? 'scalar' : `arrow-${batchSize}${placement === 'isolated' ? '-isolated' : ''}`,
    kind: batchSize === null ? ('scalar' as const) : ('arrow' as const),
    batchSize,
    placement: batchSize === null ? null : placement,
    latency: aggregate([run(p50, p99)]),
    findMax: best === null ? null : search(best, best * 2),
  };
}

/** A result as the scenario returns it, with made-up figures. */
function fakeResult(findMax: boolean): ArrowUdfResult {
  const b = (n: number) => (findMax ? n : null);
  return {
    scenario: 'arrow-udf',
    description: 'the dot product',
    machine: {
      nproc: 2,
      cpuModel: 'test CPU',
      node: 'v20.0.0',
      platform: 'linux',
      arch: 'x64',
      totalMemoryGiB: 8,
      gc: 'V8 default',
      heapGrowth: null,
    },
    settings: {
      rate: 10_000,
      durationMs: 5000,
      warmupMs: 3000,
      runs: 1,
      batchSizes: [1, 100, 10_000],
      findMax,
      maxTimeMs: 360_000,
      spinMicros: undefined,
      placements: ['inline', 'isolated'],
    },
    variants: withRatios([
      variant(null, 0.01, 0.05, b(2_000_000)),
      variant(1, 0.05, 0.2, b(100_000)),
      variant(100, 0.1, 0.5, b(800_000)),
      variant(10_000, 0.4, 4, b(1_600_000)),
      variant(1, 0.1, 2, b(50_000), 'isolated'),
      variant(10_000, 0.5, 5, b(1_000_000), 'isolated'),
    ]),
    files: ['/tmp/x/arrow-udf.svg', '/tmp/x/arrow-udf.json'],
  };
}

describe('millrace bench arrow-udf: the command line', () => {
  it('defaults to 10 k rows/s, batch sizes 1 to 10 000, a short run and the throughput search', () => {
    assert.deepEqual(parseArrowUdfArgs([]), {
      rate: 10_000,
      durationMs: 5000,
      warmupMs: 3000,
      runs: 1,
      batchSizes: [1, 10, 100, 1000, 10_000],
      findMax: true,
      maxTimeMs: 360_000,
      spinMicros: undefined,
      placements: ['inline', 'isolated'],
      outDir: 'bench-out',
      json: false,
    });
  });

  it('takes the rate, the batch sizes, the window, --no-find-max and the budget', () => {
    const o = parseArrowUdfArgs([
      '--rate',
      '20k',
      '--batch-sizes',
      '1,100,10000',
      '--duration',
      '2s',
      '--warmup',
      '1s',
      '--no-find-max',
      '--max-time',
      '1min',
      '--isolate',
      '--out',
      'x',
      '--json',
    ]);
    assert.deepEqual(o.placements, ['isolated'], '--isolate: the UDF thread only');
    assert.deepEqual(parseArrowUdfArgs(['--placements', 'inline']).placements, ['inline']);
    assert.throws(() => parseArrowUdfArgs(['--placements', 'inline,elsewhere']), /--placements/);
    assert.throws(() => parseArrowUdfArgs(['--placements', 'inline', '--isolate']), /not both/);
    assert.equal(o.rate, 20_000);
    assert.deepEqual(o.batchSizes, [1, 100, 10_000]);
    assert.equal(o.durationMs, 2000);
    assert.equal(o.warmupMs, 1000);
    assert.equal(o.findMax, false);
    assert.equal(o.maxTimeMs, 60_000);
    assert.equal(o.outDir, 'x');
    assert.equal(o.json, true);
    // --find-max is the default; giving it keeps the default rate.
    assert.equal(parseArrowUdfArgs(['--find-max']).rate, 10_000);
  });

  it('rejects bad batch sizes, several rates, and --find-max with --no-find-max', () => {
    assert.deepEqual(parseBatchSizes(' 10, 1'), [10, 1]);
    for (const bad of ['', '0', '1,x', '1.5', '2000000', '1,,2']) {
      assert.throws(() => parseBatchSizes(bad), UsageError, bad);
    }
    assert.throws(() => parseBatchSizes('10,10'), /10 is given twice/);
    assert.throws(() => parseArrowUdfArgs(['--rates', '1k,2k']), /one rate/);
    assert.throws(() => parseArrowUdfArgs(['--find-max', '--no-find-max']), /not both/);
    assert.throws(() => parseArrowUdfArgs(['--bogus']), UsageError);
  });

  it('is listed among the scenarios and prints its own options for --help', async () => {
    assert.match(BENCH_USAGE, /^ {2}arrow-udf +latency and sustainable throughput/m);
    const t = fakeIO();
    assert.equal(await runBench(['arrow-udf', '--help'], t.io), ExitCode.OK);
    for (const option of [/--batch-sizes a,b,c/, /--no-find-max/, /--max-time/, /doubles from 50 k/]) {
      assert.match(t.stdout(), option);
    }
    const bad = fakeIO();
    assert.equal(await runBench(['arrow-udf', '--batch-sizes', 'x'], bad.io), ExitCode.USAGE);
    assert.match(bad.stderr(), /--batch-sizes: expected integers/);
  });
});

describe('millrace bench arrow-udf: the job and the figures', () => {
  it('scores a batch column-wise exactly as the scalar code scores each row', () => {
    const rows = Array.from({ length: 257 }, (_, i) => featureRow(0, i * 7919));
    const columns = Object.fromEntries(
      FEATURE_COLUMNS.map((c) => [c, Float64Array.from(rows, (r) => (r as any)[c] as number)]),
    );
    const scores = scoreBatch(tableFromArrays(columns));
    assert.equal(scores.length, rows.length);
    rows.forEach((r, i) => {
      assert.ok(Math.abs(scores[i]! - scoreRow(r)) < 1e-12, `row ${i}`);
    });
    // The features are deterministic and spread over [−1, 1).
    assert.deepEqual(featureRow(0, 42), featureRow(3, 42));
    const values = rows.flatMap((r) => FEATURE_COLUMNS.map((c) => (r as any)[c] as number));
    assert.ok(values.every((v) => v >= -1 && v < 1));
    assert.ok(Math.min(...values) < -0.9 && Math.max(...values) > 0.9);
  });

  it('runs scalar first, then Arrow by placement and batch size, with ratios to scalar p99 and to batch size 1', () => {
    assert.deepEqual(variantsOf([1, 10], ['inline', 'isolated']), [
      { kind: 'scalar' },
      { kind: 'arrow', batchSize: 1, placement: 'inline' },
      { kind: 'arrow', batchSize: 10, placement: 'inline' },
      { kind: 'arrow', batchSize: 1, placement: 'isolated' },
      { kind: 'arrow', batchSize: 10, placement: 'isolated' },
    ]);
    const r = fakeResult(true);
    const by = (name: string) => r.variants.find((v) => v.variant === name) as ArrowUdfVariantResult;
    assert.equal(by('scalar').p99VsScalar, 1);
    assert.ok(Math.abs(by('arrow-10000').p99VsScalar! - 80) < 1e-9);
    assert.equal(by('arrow-1').throughputVsBatch1, 1);
    assert.equal(by('arrow-100').throughputVsBatch1, 8);
    assert.equal(by('scalar').throughputVsBatch1, 20);
    assert.equal(by('arrow-10000-isolated').throughputVsBatch1, 20, 'beside batch size 1 of its placement');
    assert.equal(by('arrow-1-isolated').p99VsScalar, 40);
    const none = fakeResult(false);
    assert.ok(none.variants.every((v) => v.throughputVsBatch1 === null));
  });

  it('prints one line per variant, the probes, and the targets read from it without a verdict', () => {
    const table = renderArrowUdfReport(fakeResult(true));
    assert.match(
      table,
      /^variant +batch size +p50 +p99 .*max sustainable rows\/s +p99 \/ scalar +rate \/ batch 1$/m,
    );
    assert.match(table, /^scalar +– +10 µs +50 µs .* 2 M +1\.00 × +20\.00 ×$/m);
    assert.match(table, /^arrow-100 +100 +100 µs +500 µs .* 800 k +10\.00 × +8\.00 ×$/m);
    assert.match(table, /^arrow-10000 +10 000 +400 µs +4\.00 ms .* 1\.6 M +80\.00 × +16\.00 ×$/m);
    assert.match(table, /^arrow-1 +100 k rows\/s +200 k rows\/s +50 k✓ 100 k✗\(2\)$/m);
    assert.match(table, /targets: A1 \(batch size 1 beside scalar\) and A2/);
    assert.match(table, /^arrow-10000-isolated +10 000 +500 µs +5\.00 ms .* 1 M +100\.00 × +20\.00 ×$/m);
    assert.match(table, /the Arrow UDF on the task's thread \(arrow-<batch size>\) and on a UDF thread/);
    assert.doesNotMatch(table, /PASS|MISS/);
    const quick = renderArrowUdfReport(fakeResult(false));
    assert.match(quick, /not searched: --no-find-max/);
    assert.doesNotMatch(quick, /by variant/);
  });

  it('plots p99 and p50 by batch size beside the scalar p99, and the sustainable rates', () => {
    const svg = renderArrowUdfPlot(plotInput(fakeResult(true)), 'sub & title');
    assert.equal(svg.match(/<path /g)?.length, 6, 'p99, p50 and sustainable rate of each placement');
    assert.match(svg, /Arrow UDF p99, task&#39;s thread|Arrow UDF p99, task's thread/);
    assert.match(svg, /Arrow UDF p99, UDF thread/);
    assert.equal(svg.match(/stroke-dasharray/g)?.length, 4, 'two reference lines, their legends');
    assert.match(svg, /scalar UDF p99 \(50 µs\)/);
    assert.match(svg, /scalar UDF \(2 M rows\/s\)/);
    assert.match(svg, />10 000</, 'the batch-size axis reaches 10 000');
    assert.match(svg, /sub &#38; title/);
    const quick = renderArrowUdfPlot(plotInput(fakeResult(false)), '');
    assert.equal(quick.match(/<path /g)?.length, 4, 'no throughput panel without the search');
    assert.doesNotMatch(quick, /sustainable rate/);
  });

  it('scales axes in whole decades (log) or round steps from 0 (linear)', () => {
    const log = axisScale([1, 10_000], true);
    assert.deepEqual(log.ticks, [1, 10, 100, 1000, 10_000]);
    assert.equal(log.at(100), 0.5);
    assert.deepEqual(axisScale([3], true).ticks, [1, 10], 'at least one decade');
    const lin = axisScale([0, 1_600_000, 2_000_000], false);
    assert.deepEqual(lin.ticks, [0, 500_000, 1_000_000, 1_500_000, 2_000_000]);
    assert.equal(lin.at(1_000_000), 0.5);
    // Points a log axis cannot draw are skipped, not drawn at NaN.
    const svg = renderXyPlot('t', 's', [
      {
        title: 'p',
        x: { label: 'x', log: true, format: String },
        y: { label: 'y', log: true, format: String },
        series: [
          {
            name: 'a',
            color: '#000000',
            points: [
              { x: 0, y: 1 },
              { x: 10, y: Number.NaN },
              { x: 100, y: 2 },
            ],
          },
        ],
      },
    ]);
    assert.doesNotMatch(svg, /NaN|Infinity/);
    assert.equal(svg.match(/<circle /g)?.length, 1);
  });
});

describe('millrace bench arrow-udf: a smoke run', () => {
  it('measures the scalar and one Arrow variant in each placement briefly and writes HDR files, the plot and JSON', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const result = await runArrowUdf(
        {
          rate: 2000,
          durationMs: 1000,
          warmupMs: 300,
          runs: 1,
          batchSizes: [10],
          findMax: false,
          maxTimeMs: 0,
          spinMicros: undefined,
          placements: ['inline', 'isolated'],
          outDir: out,
          json: true,
        },
        progressIO(),
        NEVER,
      );
      assert.deepEqual(
        result.variants.map((v) => [v.variant, v.batchSize, v.placement]),
        [
          ['scalar', null, null],
          ['arrow-10', 10, 'inline'],
          ['arrow-10-isolated', 10, 'isolated'],
        ],
      );
      for (const v of result.variants) {
        assertLatency(v.latency.median, v.variant);
        assert.equal(v.findMax, null);
      }
      for (const name of [
        'arrow-udf-scalar-run1.hgrm',
        'arrow-udf-arrow-10-run1.hgrm',
        'arrow-udf-arrow-10-isolated-run1.hgrm',
        'arrow-udf.svg',
      ]) {
        assert.ok(existsSync(join(out, name)), `${name} was written`);
      }
      const json = JSON.parse(readFileSync(join(out, 'arrow-udf.json'), 'utf8')) as ArrowUdfResult;
      assert.equal(json.scenario, 'arrow-udf');
      assert.equal(json.variants.length, 3);
      assert.ok(json.files.some((f) => f.endsWith('arrow-udf.json')));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
