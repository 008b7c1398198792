import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renderWindowedCountReport } from '../../src/bench/millrace-report.js';
import { runWindowedCount } from '../../src/bench/windowed-count.js';
import { NEVER, progressIO, smokeRun } from './progress-io.js';

describe('the windowed-count benchmark', () => {
  it('measures the keyed window count at one rate and writes HDR files, a plot and JSON', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const result = await runWindowedCount(
        { ...smokeRun(out, { warmupMs: 500 }), keys: 500, partitions: 2 },
        progressIO(),
        NEVER,
      );
      assert.equal(result.scenario, 'windowed-count');
      assert.match(result.description, /generator \(2 partitions, 500 cards\).*update mode/);
      assert.match(result.baseline, /postMessage/);
      assert.ok(result.machine.nproc > 0 && result.machine.node.startsWith('v'));
      assert.equal(result.settings.keys, 500);
      assert.equal(result.settings.partitions, 2);
      assert.equal(result.rates.length, 1);
      const [at] = result.rates;
      assert.equal(at!.rate, 2000);
      assert.equal(at!.systems.postmessage, undefined, 'Millrace only');
      const a = at!.systems.millrace;
      assert.ok(a, 'Millrace was measured');
      assert.equal(a.runs.length, 1);
      const l = a.median;
      assert.ok(l.count > 0, 'rows were recorded');
      const order = [l.p50, l.p90, l.p99, l.p999, l.p9999, l.max];
      for (const v of order) assert.ok(Number.isFinite(v) && v >= 0, `finite percentiles, got ${order}`);
      assert.equal(typeof a.sustainable, 'boolean');
      const run = a.runs[0]!;
      assert.ok(run.windowMs > 0 && run.throughput > 0);
      // Sources and sinks run on both workers: the spread of their clocks, not a skew.
      assert.equal(run.clockSkewMs, null);
      assert.equal(typeof run.clockSpreadMs, 'number');
      // The state of the aggregation, from the progress reports.
      assert.ok(run.state, 'state was reported');
      assert.ok(run.state.rows > 0 && run.state.rows <= run.state.maxRows);
      assert.ok(run.state.memoryBytes > 0);
      assert.equal(typeof run.state.droppedLate, 'number');
      // E2 is defined at 100 k rows/s only; no target is claimed from a smoke run.
      assert.deepEqual(result.targets, []);
      assert.equal(result.findMax, null);

      for (const name of [
        'windowed-count-2000-millrace-run1.hgrm',
        'windowed-count-2000.svg',
        'windowed-count.json',
      ]) {
        assert.ok(existsSync(join(out, name)), `${name} was written`);
      }
      assert.match(
        readFileSync(join(out, 'windowed-count-2000-millrace-run1.hgrm'), 'utf8'),
        /Value\s+Percentile/,
      );
      const svg = readFileSync(join(out, 'windowed-count-2000.svg'), 'utf8');
      assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      assert.equal(svg.match(/<path /g)?.length, 1, 'one line: Millrace');
      assert.match(svg, /tumbling count/);

      const table = renderWindowedCountReport(result);
      assert.match(table, /^ *2 000 +Millrace +\d/m);
      assert.match(table, /groups held/);
      assert.match(table, /baseline: none/);
      assert.match(table, /machine: nproc \d+/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('checks T2 with the search for the highest sustainable rate (here with no time to probe)', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const result = await runWindowedCount(
        {
          ...smokeRun(out, { rates: [], findMax: true, maxTimeMs: 1, warmupMs: 4000, durationMs: 10_000 }),
          keys: 100_000,
          partitions: 2,
        },
        progressIO(),
        NEVER,
      );
      assert.deepEqual(result.rates, []);
      assert.ok(result.findMax?.millrace);
      assert.deepEqual(result.findMax.millrace.tried, []);
      assert.deepEqual(
        result.targets.map((t) => t.id),
        ['T2'],
      );
      assert.match(renderWindowedCountReport(result), /highest sustainable rate/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
