import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EpochLogs } from '../../src/checkpoint/epoch-logs.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/stateless.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const stateless = new URL('../fixtures/jobs/stateless.js', import.meta.url);
const triggers = new URL('../fixtures/jobs/triggers.js', import.meta.url);

const tempDir = tempDirs('millrace-recovery');

const pay = (n: number): Payment => ({ txId: `t${n}`, cardId: `c${n % 3}`, amount: n, country: 'FR' });
const ids = (rows: unknown[]) => rows.map((r) => (r as Payment).txId);
const epochFiles = (dir: string, log: 'offsets' | 'commits') =>
  readdirSync(join(dir, log))
    .map(Number)
    .sort((a, b) => a - b);

describe('restart from a checkpoint (real-time mode)', () => {
  it('commits what a stopped run processed, and the next run goes on after it, each row once', async () => {
    const dir = tempDir();
    const first = await startQuery(stateless, { checkpointLocation: dir, clock: 'manual' });
    first.source<Payment>('payments').addData([pay(1), pay(2), pay(3)]);
    await first.processAllAvailable();
    await first.stop();
    assert.deepEqual(epochFiles(dir, 'offsets'), [0], 'the stop ended epoch 0 and wrote its offsets');
    assert.deepEqual(epochFiles(dir, 'commits'), [0]);

    const second = await startQuery(stateless, {
      checkpointLocation: dir,
      clock: 'manual',
      continueFrom: first,
    });
    try {
      assert.equal(second.id, first.id, 'the query id lives in the checkpoint');
      assert.notEqual(second.runId, first.runId);
      second.source<Payment>('payments').addData([pay(4)]);
      await second.processAllAvailable();
      assert.deepEqual(ids(second.sink('out').rows()), ['t1', 't2', 't3', 't4']);
      assert.deepEqual(
        second
          .sink('out')
          .epochs()
          .map((e) => [e.epochId, ids(e.rows)]),
        [
          [0, ['t1', 't2', 't3']],
          [1, ['t4']],
        ],
      );
    } finally {
      await second.stop();
    }
    assert.deepEqual(epochFiles(dir, 'commits'), [0, 1]);
  });

  it('sends again what the last committed epoch did not cover', async () => {
    const dir = tempDir();
    const first = await startQuery(stateless, { checkpointLocation: dir, clock: 'manual' });
    first.source<Payment>('payments').addData([pay(1), pay(2)]);
    await first.processAllAvailable();
    await first.stop();
    // The offsets the next run resumes from say only the first row was committed: the second
    // row of the log is sent again, and nothing before it.
    const logs = new EpochLogs(new CheckpointLayout(dir));
    const entry = (await logs.readOffsets(0))!;
    await logs.writeOffsets(0, { ...entry, sources: [{ key: '0', offsets: { 0: 1 } }] });

    const second = await startQuery(stateless, {
      checkpointLocation: dir,
      clock: 'manual',
      initialData: { payments: [pay(1), pay(2), pay(3)] },
    });
    try {
      await second.processAllAvailable();
      assert.deepEqual(ids(second.sink('out').rows()), ['t2', 't3']);
    } finally {
      await second.stop();
    }
  });

  it('gives rows added after a restart the offsets after the committed ones when the log was not handed over', async () => {
    const dir = tempDir();
    const first = await startQuery(stateless, { checkpointLocation: dir, clock: 'manual' });
    first.source<Payment>('payments').addData([pay(1), pay(2)]);
    await first.processAllAvailable();
    await first.stop();

    const second = await startQuery(stateless, { checkpointLocation: dir, clock: 'manual' });
    const progress: number[] = [];
    second.on('epochCommitted', (e) => progress.push(e));
    second.source<Payment>('payments').addData([pay(3)]);
    await second.processAllAvailable();
    await second.stop();
    assert.deepEqual(ids(second.sink('out').rows()), ['t3']);
    const entry = await new EpochLogs(new CheckpointLayout(dir)).readOffsets(1);
    assert.deepEqual(entry?.sources, [{ key: '0', offsets: { 0: 3 } }]);
    assert.deepEqual(progress, [1]);
  });

  it('refuses a second run on a checkpoint in use, and accepts it once the first has stopped', async () => {
    const dir = tempDir();
    const first = await startQuery(stateless, { checkpointLocation: dir, clock: 'manual' });
    try {
      await assert.rejects(
        startQuery(stateless, { checkpointLocation: dir, clock: 'manual' }),
        (e: Error) => {
          assert.equal((e as { code?: string }).code, 'CHECKPOINT_IN_USE');
          assert.match(e.message, new RegExp(String(process.pid)));
          return true;
        },
      );
      assert.equal(first.isActive, true, 'the running query is untouched');
    } finally {
      await first.stop();
    }
    const again = await startQuery(stateless, { checkpointLocation: dir, clock: 'manual' });
    await again.stop();
  });

  it('fails with CHECKPOINT_CORRUPT naming the file when a commit is damaged, and starts nothing', async () => {
    const dir = tempDir();
    const first = await startQuery(stateless, { checkpointLocation: dir, clock: 'manual' });
    first.source<Payment>('payments').addData([pay(1)]);
    await first.processAllAvailable();
    await first.stop();
    writeFileSync(join(dir, 'commits', '0'), 'v1\n{"nextBatchWatermarkMs":0}\n');
    await assert.rejects(startQuery(stateless, { checkpointLocation: dir, clock: 'manual' }), (e: Error) => {
      assert.equal((e as { code?: string }).code, 'CHECKPOINT_CORRUPT');
      assert.ok(e.message.includes(join(dir, 'commits', '0')), e.message);
      return true;
    });
    // The failed start released the checkpoint: after a repair, a run starts.
    rmSync(join(dir, 'commits', '0'));
    const again = await startQuery(stateless, {
      checkpointLocation: dir,
      clock: 'manual',
      initialData: { payments: [pay(1)] },
    });
    await again.processAllAvailable();
    await again.stop();
    assert.deepEqual(ids(again.sink('out').rows()), ['t1'], 'epoch 0 had no commit: it is done again');
  });
});

describe('restart from a checkpoint (micro-batch mode)', () => {
  it('redoes a planned but uncommitted batch with exactly its offsets, then goes on', async () => {
    const dir = tempDir();
    const params = { trigger: 'availableNow', maxRowsPerTrigger: 100 };
    const rows = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ n: from + i }));
    const first = await startQuery(triggers, {
      checkpointLocation: dir,
      clock: 'manual',
      params,
      initialData: { in: { 0: rows(0, 3), 1: rows(100, 102) } },
    });
    await first.awaitTermination(10_000);
    assert.deepEqual(epochFiles(dir, 'commits'), [0]);
    // A batch the last run planned and did not finish: offsets written, no commit.
    const logs = new EpochLogs(new CheckpointLayout(dir));
    const entry = (await logs.readOffsets(0))!;
    await logs.writeOffsets(1, { ...entry, sources: [{ key: '0', offsets: { 0: 4, 1: 2 } }] });

    const second = await startQuery(triggers, {
      checkpointLocation: dir,
      clock: 'manual',
      params,
      continueFrom: first,
      initialData: { in: { 0: rows(3, 6) } },
    });
    await second.awaitTermination(10_000);
    const epochs = second.sink<{ n: number }>('out').epochs();
    assert.deepEqual(
      epochs.map((e) => [e.epochId, e.rows.map((r) => r.n).sort((a, b) => a - b)]),
      [
        [0, [0, 1, 2, 100, 101]],
        [1, [3]],
        [2, [4, 5]],
      ],
    );
    assert.deepEqual(epochFiles(dir, 'commits'), [0, 1, 2]);
  });
});
