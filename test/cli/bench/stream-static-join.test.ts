import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BENCH_USAGE, runBench } from '../../../src/cli/bench/index.js';
import { renderStreamStaticJoinReport } from '../../../src/cli/bench/millrace-report.js';
import type { StreamStaticJoinResult } from '../../../src/cli/bench/stream-static-join.js';
import { ExitCode } from '../../../src/cli/io.js';
import { assertEveryRowRecorded, assertLatency } from './assert-run.js';
import { fakeIO } from './fake-io.js';

describe('millrace bench stream-static-join', () => {
  it('measures payments joined with the merchant-risk table, with no target claimed', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const io = fakeIO();
      const code = await runBench(
        [
          'stream-static-join',
          '--rate',
          '2000',
          '--duration',
          '2s',
          '--warmup',
          '0.5s',
          '--out',
          out,
          '--json',
        ],
        io,
      );
      assert.equal(code, ExitCode.OK, io.stderr());
      const result = JSON.parse(io.stdout()) as StreamStaticJoinResult;
      assert.equal(result.scenario, 'stream-static-join');
      assert.match(result.description, /join on merchant with the merchant-risk table.*no shuffle/);
      assert.match(result.baseline, /p99 9 ms at 10 k rows\/s/);
      const a = result.rates[0]!.systems.millrace;
      assert.ok(a, 'Millrace was measured');
      assertLatency(a.median, 'stream-static-join');
      const run = a.runs[0]!;
      assertEveryRowRecorded(run, 'stream-static-join');
      assert.equal(run.state, undefined, 'a stateless query reports no state');
      assert.deepEqual(result.targets, []);
      for (const name of [
        'stream-static-join-2000-millrace-run1.hgrm',
        'stream-static-join-2000.svg',
        'stream-static-join.json',
      ]) {
        assert.ok(existsSync(join(out, name)), `${name} was written`);
      }

      const table = renderStreamStaticJoinReport(result);
      assert.match(table, /^ *2 000 +Millrace +\d/m);
      assert.doesNotMatch(table, /state rows held|groups held/);
      assert.match(table, /no target id is set for a stream–static join/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('is listed by millrace bench --help, beside fraud', async () => {
    const io = fakeIO();
    assert.equal(await runBench(['--help'], io), ExitCode.OK);
    assert.equal(io.stdout(), BENCH_USAGE);
    assert.match(BENCH_USAGE, /^ {2}fraud +E4/m);
    assert.match(BENCH_USAGE, /^ {2}stream-static-join$/m);
  });
});
