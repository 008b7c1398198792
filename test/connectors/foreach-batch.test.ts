import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MillraceError, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/foreach-batch.js', import.meta.url);
const tempDir = tempDirs('millrace-foreach-batch');

const batches = (log: string) =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { batchId: number; rows: { n: number }[] })
    : [];

describe('sinks.foreachBatch', () => {
  it('hands each micro-batch to user code as an Arrow table, with the batch id', async () => {
    const log = join(tempDir(), 'batches.jsonl');
    const q = await startQuery(job, {
      params: { log, trigger: 'availableNow' },
      clock: 'manual',
      initialData: { in: [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }] },
    });
    await q.awaitTermination();
    assert.deepEqual(batches(log), [
      { batchId: 0, rows: [{ n: 1 }, { n: 2 }] },
      { batchId: 1, rows: [{ n: 3 }, { n: 4 }] },
      { batchId: 2, rows: [{ n: 5 }] },
    ]);
  });

  it('hands over what a partition wrote in a real-time epoch when the epoch ends', async () => {
    const log = join(tempDir(), 'batches.jsonl');
    const q = await startQuery(job, { params: { log }, clock: 'manual' });
    try {
      q.source<{ n: number }>('in').addData([{ n: 1 }, { n: 2 }]);
      await q.processAllAvailable();
      assert.deepEqual(batches(log), [], 'the epoch has not ended');
      q.clock.advance(1000);
      await q.processAllAvailable();
      q.source<{ n: number }>('in').addData([{ n: 3 }]);
      q.clock.advance(1000);
      await q.processAllAvailable();
      assert.deepEqual(batches(log), [
        { batchId: 0, rows: [{ n: 1 }, { n: 2 }] },
        { batchId: 1, rows: [{ n: 3 }] },
      ]);
    } finally {
      await q.stop();
    }
  });

  it('fails the query with what the user code threw', async () => {
    const log = join(tempDir(), 'batches.jsonl');
    const q = await startQuery(job, {
      params: { log, trigger: 'availableNow' },
      clock: 'manual',
      initialData: { in: [{ n: 1 }, { n: -1 }] },
    });
    await assert.rejects(
      q.awaitTermination(),
      (e: unknown) =>
        e instanceof MillraceError &&
        e.code === 'TASK_FAILED' &&
        /batch 0 holds a negative row/.test(e.message),
    );
  });
});
