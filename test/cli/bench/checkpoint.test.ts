import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type CheckpointResult, parseCheckpointArgs } from '../../../src/cli/bench/checkpoint.js';
import { renderCheckpointReport } from '../../../src/cli/bench/checkpoint-report.js';
import { runBench } from '../../../src/cli/bench/index.js';
import { ExitCode } from '../../../src/cli/io.js';
import { fakeIO } from './fake-io.js';

describe('millrace bench checkpoint', () => {
  it('defaults to E3 and C1: 100 k rows/s, 1 M cards, a checkpoint every second, a 10-s watermark delay', () => {
    const o = parseCheckpointArgs([]);
    assert.equal(o.rate, 100_000);
    assert.equal(o.keys, 1_000_000);
    assert.equal(o.intervalMs, 1000);
    assert.equal(o.delayMs, 10_000);
    assert.ok(o.warmupMs >= o.delayMs + 2000, 'the warm-up lets the state reach its steady size');
    assert.equal(o.durationMs, 20_000);
    assert.equal(o.runs, 1);
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

  it('runs the query without and with a checkpoint, restarts it, and writes HDR files, a plot and JSON', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const io = fakeIO();
      const code = await runBench(
        [
          'checkpoint',
          ...['--rate', '2000', '--keys', '500', '--delay', '1s', '--interval', '300ms'],
          ...['--warmup', '1s', '--duration', '1s', '--restart-for', '3s', '--out', out, '--json'],
        ],
        io,
      );
      assert.equal(code, ExitCode.OK, io.stderr());
      const result = JSON.parse(io.stdout()) as CheckpointResult;
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

  it('answers a wrong command line with the usage and exit status 2', async () => {
    for (const args of [
      ['checkpoint', '--keys', '0'],
      ['checkpoint', '--rates', '1k,2k'],
      ['checkpoint', '--find-max'],
      ['checkpoint', '--interval', '0s'],
      ['checkpoint', '--only', 'postmessage'],
    ]) {
      const io = fakeIO();
      assert.equal(await runBench(args, io), ExitCode.USAGE, `millrace bench ${args.join(' ')}`);
      assert.match(io.stderr(), /millrace bench checkpoint/);
      assert.equal(io.stdout(), '');
    }
  });

  it('prints its options for --help', async () => {
    const io = fakeIO();
    assert.equal(await runBench(['checkpoint', '--help'], io), ExitCode.OK);
    assert.match(io.stdout(), /--interval/);
    assert.match(io.stdout(), /--restart-for/);
  });
});
