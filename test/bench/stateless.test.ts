import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renderStatelessReport } from '../../src/bench/report.js';
import { runStateless, type StatelessOptions } from '../../src/bench/stateless.js';
import { assertLatency } from './assert-run.js';
import { NEVER, progressIO, smokeRun } from './progress-io.js';

/** A smoke run of both systems, one thread hop (the scenario's defaults otherwise). */
const options = (outDir: string, o: Partial<StatelessOptions> = {}): StatelessOptions => ({
  ...smokeRun(outDir),
  systems: ['millrace', 'postmessage'],
  fused: false,
  partitions: 2,
  ...o,
});

describe('the stateless benchmark', () => {
  it('measures Millrace and the postMessage pipeline at one rate and writes HDR files, a plot and JSON', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const io = progressIO();
      const result = await runStateless(options(out), io, NEVER);
      assert.match(
        io.stderr(),
        /^stateless: postMessage at .*, run 1 of 1$/m,
        'progress goes to the BenchIO',
      );
      assert.equal(result.scenario, 'stateless');
      assert.ok(result.machine.nproc > 0 && result.machine.node.startsWith('v'));
      assert.equal(result.rates.length, 1);
      const [at] = result.rates;
      assert.equal(at!.rate, 2000);
      for (const system of ['millrace', 'postmessage'] as const) {
        const a = at!.systems[system];
        assert.ok(a, `${system} was measured`);
        assert.equal(a.runs.length, 1);
        assertLatency(a.median, system);
        assert.equal(typeof a.sustainable, 'boolean');
        assert.ok(a.runs[0]!.windowMs > 0 && a.runs[0]!.throughput > 0);
        // Millrace's source and sink threads report their latency clocks; the baseline reads one clock.
        if (system === 'millrace') assert.equal(typeof a.runs[0]!.clockSkewMs, 'number');
        else assert.equal(a.runs[0]!.clockSkewMs, null);
      }
      // E1 is defined at 100 k rows/s only; no target is claimed from a smoke run.
      assert.deepEqual(result.targets, []);

      for (const name of [
        'stateless-2000-millrace-run1.hgrm',
        'stateless-2000-postmessage-run1.hgrm',
        'stateless-2000.svg',
        'stateless.json',
      ]) {
        assert.ok(existsSync(join(out, name)), `${name} was written`);
      }
      assert.match(
        readFileSync(join(out, 'stateless-2000-millrace-run1.hgrm'), 'utf8'),
        /Value\s+Percentile/,
      );
      const svg = readFileSync(join(out, 'stateless-2000.svg'), 'utf8');
      assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      assert.equal(svg.match(/<path /g)?.length, 2, 'one line per system');
      assert.match(svg, /Millrace/);
      assert.match(svg, /postMessage/);

      const table = renderStatelessReport(result);
      assert.match(table, /^ *2 000 +Millrace +\d/m);
      assert.match(table, /^ *2 000 +postMessage +\d/m);
      assert.match(table, /machine: nproc \d+/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('runs Millrace fused (no thread hop) over several partitions', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const result = await runStateless(
        options(out, { systems: ['millrace'], fused: true, partitions: 2 }),
        progressIO(),
        NEVER,
      );
      assert.match(result.description, /generator \(2 partitions\).*no thread hop/);
      assert.equal(result.settings.fused, true);
      assertLatency(result.rates[0]!.systems.millrace!.median, 'millrace fused');
      assert.equal(result.rates[0]!.systems.postmessage, undefined);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
