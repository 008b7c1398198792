import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { renderScaleOutReport, runScaleOut } from '../../src/bench/scale-out.js';
import { UsageError } from '../../src/cli/bench/options.js';
import { parseScaleOutArgs } from '../../src/cli/bench/scale-out-args.js';
import { TestBroker } from '../kafka/broker/index.js';
import { NEVER, progressIO } from './progress-io.js';

describe('the scale-out benchmark (S1)', () => {
  let broker: TestBroker;

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
  });

  after(async () => {
    await broker?.close();
  });

  it('runs one member, then a group of two, over the same rows, and reports both rates', async () => {
    const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
    try {
      const options = {
        ...parseScaleOutArgs(['--kafka', broker.bootstrap, '--processes', '2', '--partitions', '2']),
        rows: 4000,
        outDir: out,
      };
      const result = await runScaleOut(options, progressIO(), NEVER);
      assert.deepEqual(
        result.runs.map((r) => r.processes),
        [1, 2],
      );
      for (const r of result.runs) {
        assert.ok(r.settleMs > 0 && r.drainMs >= 0, 'the run settled, then drained');
        assert.ok(r.outBeforeSettle >= 0 && r.outBeforeSettle <= options.rows);
        assert.ok(r.producedPerSecond > 0);
      }
      // Every member of a group of two needs a task's worker and its main thread: 2 cores each.
      assert.equal(result.coresNeeded, 2);
      assert.equal(result.ownCores, result.machine.nproc >= 4);
      const report = renderScaleOutReport(result);
      assert.match(report, /^millrace bench scale-out \(S1\)/);
      assert.match(report, /2 members ÷ 1: /);
      assert.ok(existsSync(join(out, 'scale-out.json')));
      // Each run's topics are gone after it.
      assert.deepEqual(
        broker.topics().filter((t) => t.startsWith('millrace-bench-')),
        [],
      );
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('refuses a command line without brokers, or with fewer partitions than members', () => {
    assert.throws(() => parseScaleOutArgs([]), UsageError);
    assert.throws(
      () => parseScaleOutArgs(['--kafka', '127.0.0.1:9092', '--processes', '4', '--partitions', '3']),
      /each member needs a task/,
    );
    assert.throws(() => parseScaleOutArgs(['--kafka', '127.0.0.1:9092', '--processes', '1']), /at least 2/);
  });
});
