import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renderStreamStaticJoinReport } from '../../src/bench/millrace-report.js';
import { runStreamStaticJoin } from '../../src/bench/stream-static-join.js';
import { assertEveryRowRecorded, assertLatency } from './assert-run.js';
import { NEVER, progressIO, smokeRun } from './progress-io.js';

describe('the stream–static join benchmark', () => {
  it('measures payments joined with the merchant-risk table, with no target claimed', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const result = await runStreamStaticJoin(
        { ...smokeRun(out, { durationMs: 2000, warmupMs: 500 }), partitions: 2 },
        progressIO(),
        NEVER,
      );
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
});
