import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readLock } from '../../src/checkpoint/inspect.js';
import { CheckpointLock } from '../../src/checkpoint/lock.js';
import { type MillraceError, startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/stateless.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const stateless = new URL('../fixtures/jobs/stateless.js', import.meta.url);
const tempDir = tempDirs('millrace-lost-lease');

describe('a run whose checkpoint lease is taken over', () => {
  it('fails with CHECKPOINT_IN_USE naming the run that took its checkpoint over, and leaves that run its lock', async () => {
    const dir = tempDir();
    const q = await startQuery(stateless, {
      checkpointLocation: dir,
      clock: 'manual',
      // Renewed every 20 ms: the run notices the takeover at once.
      checkpointLease: { periodMs: 60_000, renewMs: 20 },
    });
    let usurper: CheckpointLock | undefined;
    try {
      q.source<Payment>('payments').addData([{ txId: 't1', cardId: 'c', amount: 1, country: 'FR' }]);
      await q.processAllAvailable();
      // A run on another host, whose clock is an hour ahead, finds this run's heartbeat an hour old
      // (as if this process had been paused that long) and takes the checkpoint over.
      usurper = await CheckpointLock.acquire(
        join(dir, 'lock'),
        { queryId: q.id, runId: 'usurper' },
        { host: 'elsewhere', now: () => Date.now() + 3_600_000 },
      );
      const error = await q.awaitTermination().then(
        () => assert.fail('the query should have failed'),
        (e: MillraceError) => e,
      );
      assert.equal(error.code, 'CHECKPOINT_IN_USE');
      assert.match(
        error.message,
        new RegExp(
          `checkpoint ${dir} was taken over by query ${q.id} \\(run usurper, process ${process.pid} on elsewhere`,
        ),
      );
      assert.equal(q.status.state, 'failed');
      assert.equal(
        (await readLock(join(dir, 'lock'))).runId,
        'usurper',
        'the failed run left the lock alone',
      );
    } finally {
      if (q.isActive) await q.stop();
      await usurper?.release();
    }
  });

  it('writes no offsets or commit once another run took its checkpoint over, even before a heartbeat noticed', async () => {
    const dir = tempDir();
    const hour = 3_600_000;
    const q = await startQuery(stateless, {
      checkpointLocation: dir,
      clock: 'manual',
      // No renewal during the test: only the epoch's own writes can find the lock taken.
      checkpointLease: { periodMs: hour, renewMs: hour / 3 },
    });
    let usurper: CheckpointLock | undefined;
    try {
      q.source<Payment>('payments').addData([{ txId: 't1', cardId: 'c', amount: 1, country: 'FR' }]);
      await q.processAllAvailable();
      usurper = await CheckpointLock.acquire(
        join(dir, 'lock'),
        { queryId: q.id, runId: 'usurper' },
        { host: 'elsewhere', now: () => Date.now() + 2 * hour },
      );
      // The end of epoch 0 (the default checkpoint interval is 5 minutes).
      q.clock.advance(5 * 60_000);
      await assert.rejects(q.awaitTermination(30_000), (e: MillraceError) => {
        assert.equal(e.code, 'CHECKPOINT_IN_USE');
        assert.match(e.message, /taken over by query .* \(run usurper, process \d+ on elsewhere/);
        return true;
      });
      assert.equal(existsSync(join(dir, 'offsets', '0')), false, 'no offsets of epoch 0');
      assert.equal(existsSync(join(dir, 'commits', '0')), false, 'no commit of epoch 0');
      assert.equal((await readLock(join(dir, 'lock'))).runId, 'usurper');
    } finally {
      if (q.isActive) await q.stop();
      await usurper?.release();
    }
  });
});
