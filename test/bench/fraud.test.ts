import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import * as hdr from 'hdr-histogram-js';
import { aggregate } from '../../src/bench/aggregate.js';
import { runFraud } from '../../src/bench/fraud.js';
import { renderFraudReport } from '../../src/bench/millrace-report.js';
import { latencyChecks } from '../../src/bench/millrace-scenario.js';
import { assertEveryRowRecorded, assertLatency } from './assert-run.js';
import { NEVER, progressIO, smokeRun } from './progress-io.js';

describe('the fraud benchmark', () => {
  it('measures the fraud detector with a verdict per payment, and the state it holds', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const result = await runFraud(
        { ...smokeRun(out, { durationMs: 2000, warmupMs: 1000 }), partitions: 2 },
        progressIO(),
        NEVER,
      );
      assert.equal(result.scenario, 'fraud');
      assert.match(
        result.description,
        /join with the merchant-risk table.*transformWithState\(FraudDetector/,
      );
      assert.match(result.baseline, /postMessage/);
      assert.equal(result.settings.partitions, 2);
      assert.equal(result.rates.length, 1);
      const [at] = result.rates;
      assert.equal(at!.rate, 2000);
      assert.equal(at!.systems.postmessage, undefined, 'Millrace only');
      const a = at!.systems.millrace;
      assert.ok(a, 'Millrace was measured');
      assertLatency(a.median, 'fraud');
      const run = a.runs[0]!;
      // One verdict per payment: alerts alone would be a few rows a second.
      assertEveryRowRecorded(run, 'fraud');
      assert.equal(typeof run.clockSpreadMs, 'number');
      assert.ok(run.state, "the detector's state was reported");
      assert.ok(run.state.rows > 0 && run.state.memoryBytes > 0);
      // E4 is defined at 50 k rows/s only; no target is claimed from a smoke run.
      assert.deepEqual(result.targets, []);
      assert.equal(result.findMax, null);
      for (const name of ['fraud-2000-millrace-run1.hgrm', 'fraud-2000.svg', 'fraud.json']) {
        assert.ok(existsSync(join(out, name)), `${name} was written`);
      }
      // Latency over time: an interval log HdrHistogram's reader takes, and its plot.
      const reader = new hdr.HistogramLogReader(
        readFileSync(join(out, 'fraud-2000-millrace-run1.hlog'), 'utf8'),
      );
      let intervals = 0;
      let recorded = 0;
      for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) {
        intervals++;
        recorded += h.totalCount;
      }
      assert.ok(
        intervals >= 1 && recorded > 0,
        `the log holds the window's intervals (${intervals}, ${recorded} values)`,
      );
      const overTime = readFileSync(join(out, 'fraud-2000-millrace-run1-over-time.svg'), 'utf8');
      assert.match(overTime, /seconds into the measured window/);
      for (const series of ['>max<', '>p99<', '>p50<'])
        assert.ok(overTime.includes(series), `${series} in the legend`);

      const table = renderFraudReport(result);
      assert.match(table, /^ *2 000 +Millrace +\d/m);
      assert.match(table, /state rows held/);
      assert.match(table, /E4 is defined at 50 k rows\/s/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('checks E4 at 50 k rows/s', () => {
    const latency = { p50: 0.1, p90: 0.5, p99: 1.5, p999: 3, p9999: 4, max: 5, count: 500_000, mean: 0.2 };
    const run = {
      system: 'millrace' as const,
      rate: 50_000,
      windowMs: 10_000,
      latency,
      throughput: 50_000,
      backlog: { final: 0, max: 0, samples: [0], growth: 0 },
      sustainable: true,
      reasons: [],
      clockSkewMs: null,
      foreignCpuPercent: 0,
    };
    const checks = latencyChecks('E4', [{ rate: 50_000, systems: { millrace: aggregate([run]) } }], 50_000, [
      { percentile: 'p99', ms: 2 },
    ]);
    assert.deepEqual(
      checks.map((c) => [c.id, c.what, c.measured, c.pass]),
      [['E4', 'Millrace p99 at 50 k rows/s', 1.5, true]],
    );
  });
});
