import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renderOverloadReport, runOverload } from '../../src/bench/overload.js';
import { UsageError } from '../../src/cli/bench/options.js';
import { parseOverloadArgs } from '../../src/cli/bench/overload-args.js';
import { NEVER, progressIO } from './progress-io.js';

describe('the overload benchmark (M1)', () => {
  it('runs a source ten times faster than its sink, loses no row, and reports memory and backpressure', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const options = {
        ...parseOverloadArgs(['--rate', '200k', '--duration', '2s', '--warmup', '1s', '--sample', '250ms']),
        outDir: out,
      };
      const result = await runOverload(options, progressIO(), NEVER);
      assert.equal(result.sinkRate, 20_000);
      assert.ok(result.rowsIn > 0, 'the source made rows');
      assert.equal(result.rowsOut, result.rowsIn, 'every row made reached the sink');
      assert.equal(result.lost, 0);
      assert.ok(result.backlogRows >= 0 && result.backpressureMs >= 0);
      assert.ok(result.rss.length >= 8, `the resident set was sampled (${result.rss.length} samples)`);
      assert.ok(result.rssPeak >= result.rssAfterWarmup && result.rssAfterWarmup > 0);
      assert.equal(result.pass, result.bounded);
      const report = renderOverloadReport(result);
      assert.match(report, /^millrace bench overload \(M1\)/);
      assert.match(report, /lost 0\n/);
      assert.ok(existsSync(join(out, 'overload.json')));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('refuses a slowdown or a duration that is not positive', () => {
    assert.throws(() => parseOverloadArgs(['--slowdown', '0']), UsageError);
    assert.throws(() => parseOverloadArgs(['--duration', '0s']), /--duration must be positive/);
  });
});
