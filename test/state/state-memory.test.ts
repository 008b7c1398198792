import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ErrorCode, startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/aggregations.js';

const job = new URL('../fixtures/jobs/aggregations.js', import.meta.url);

/** `n` payments of `n` cards: a group each. */
const payments = (n: number): Payment[] =>
  Array.from({ length: n }, (_, i) => ({ card: `card-${i}`, amount: i, ts: 0 }));

const activeWorkers = () => process.getActiveResourcesInfo().filter((r) => r === 'Worker').length;

describe('the limit on the state a worker holds in memory', () => {
  it('fails the query with STATE_MEMORY_EXCEEDED, naming the operator, once its state outgrows stateMemoryLimitBytes', async () => {
    const before = activeWorkers();
    const q = await startQuery(job, {
      params: { case: 'per-card' },
      clock: 'manual',
      options: { workers: 1, stateMemoryLimitBytes: 64 * 1024 },
    });
    q.source<Payment>('payments').addData(payments(5000));
    await q.processAllAvailable();
    // The next progress report checks what the state holds.
    q.clock.advance(1000);
    await assert.rejects(
      q.awaitTermination(30_000),
      (e: { code?: string; message: string }) =>
        e.code === ErrorCode.STATE_MEMORY_EXCEEDED &&
        /^aggregate#\d+ \(partition \d\) holds [\d.]+ MiB of state/.test(e.message) &&
        /over the limit of 0\.1 MiB/.test(e.message),
    );
    assert.equal(q.status.state, 'failed');
    assert.equal(activeWorkers(), before, 'no worker thread is left');
  });

  it('lets a state under the limit run on, report after report', async () => {
    const q = await startQuery(job, {
      params: { case: 'per-card' },
      clock: 'manual',
      options: { workers: 1, stateMemoryLimitBytes: 64 * 1024 * 1024 },
    });
    try {
      q.source<Payment>('payments').addData(payments(5000));
      await q.processAllAvailable();
      // Each progress report checks the state, as each epoch's end does.
      for (let r = 0; r < 3; r++) {
        const reported = once(q, 'progress');
        q.clock.advance(1000);
        await reported;
      }
      assert.equal(q.isActive, true);
      assert.equal(q.sink('out').rows().length, 5000);
    } finally {
      await q.stop();
    }
  });

  it('fails a query whose state outgrows the worker heap with STATE_MEMORY_EXCEEDED, not a dying thread', async () => {
    // A count per card over ever new cards, in a process whose heap holds 64 MiB: without the
    // check the worker thread dies of heap exhaustion (TASK_FAILED, "reached memory limit").
    const runner = fileURLToPath(new URL('../fixtures/state-growth-run.js', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--max-old-space-size=64', runner], {
      timeout: 120_000,
    });
    const result = JSON.parse(stdout) as { code: string | null; message: string | null; cards: number };
    assert.equal(result.code, ErrorCode.STATE_MEMORY_EXCEEDED, result.message ?? 'the query did not fail');
    assert.match(
      result.message!,
      /^aggregate#\d+ \(partition 0\) holds [\d.]+ MiB of state, and the worker thread's heap holds/,
    );
    assert.match(
      result.message!,
      /after a full collection, over 80 % of its old generation's limit of 64\.0 MiB/,
    );
    assert.ok(result.cards > 100_000, `the state grew first (${result.cards} cards)`);
  });

  it('refuses a limit that is not a positive number of bytes', async () => {
    await assert.rejects(
      startQuery(job, { params: { case: 'per-card' }, options: { stateMemoryLimitBytes: 0 } }),
      (e: { code?: string; message: string }) =>
        e.code === ErrorCode.INVALID_ARGUMENT &&
        /stateMemoryLimitBytes must be a positive number/.test(e.message),
    );
  });
});
