import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCheckpointBench } from '../../src/bench/checkpoint.js';
import { renderCheckpointReport } from '../../src/bench/checkpoint-report.js';
import { NEVER, progressIO } from './progress-io.js';

describe('the checkpoint benchmark', () => {
  it('runs the query without and with a checkpoint, restarts it, and writes HDR files, a plot and JSON', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const io = progressIO();
      const result = await runCheckpointBench(
        {
          rate: 2000,
          keys: 500,
          delayMs: 1000,
          intervalMs: 300,
          durationMs: 1000,
          warmupMs: 1000,
          runs: 1,
          restartForMs: 3000,
          spinMicros: undefined,
          outDir: out,
          json: true,
        },
        io,
        NEVER,
      );
      assert.match(io.stderr(), /restarting the query on its checkpoint/);
      assert.equal(result.scenario, 'checkpoint');
      assert.match(result.description, /500 cards.*withWatermark\('ts', 1 s\).*update mode/);
      for (const variant of ['baseline', 'checkpointed'] as const) {
        const a = result.variants[variant];
        assert.equal(a.runs.length, 1, variant);
        assert.ok(a.median.count > 0, `${variant}: rows were recorded`);
        assert.ok(a.runs[0]!.state, `${variant}: the state was reported`);
      }
      assert.ok(Number.isFinite(result.p99Ratio));
      const [c] = result.checkpoints;
      assert.ok(c, 'the checkpointed run is described');
      assert.ok(c.epochsCommitted > 0, 'epochs were committed in the window');
      assert.ok(c.changelogs.versions > 0 && c.stateBytes > 0, 'state files were written');
      assert.equal(c.stopError, null);
      const [r] = result.restarts;
      assert.ok(r, 'the query was restarted');
      assert.equal(r.restoredVersion, (r.resumedAfterEpoch ?? -1) + 1);
      assert.ok(r.restoreFiles > 0 && r.restoreBytes > 0, 'the restart read state files');
      assert.ok((r.restoredKeys ?? 0) > 0, 'the restart restored keys');
      assert.ok(r.startMs > 0);
      assert.equal(typeof r.firstRowMs, 'number', 'the restarted query emitted a row');
      // Targets are defined at 100 k rows/s and 1 M keys only; a smoke run claims none.
      assert.deepEqual(result.targets, []);
      for (const name of [
        'checkpoint-2000-baseline-run1.hgrm',
        'checkpoint-2000-checkpointed-run1.hgrm',
        'checkpoint-2000.svg',
        'checkpoint.json',
      ]) {
        assert.ok(existsSync(join(out, name)), `${name} was written`);
      }
      const table = renderCheckpointReport(result);
      assert.match(table, /^no checkpoint +\d/m);
      assert.match(table, /^checkpoint every 0\.3 s +\d/m);
      assert.match(table, /restart on the checkpoint/);
      assert.match(table, /keys restored/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
