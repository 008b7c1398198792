import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type RateRow, type StreamingQueryProgress, startQuery } from '../../src/index.js';

const rate = new URL('../fixtures/jobs/rate.js', import.meta.url);
const generator = new URL('../fixtures/jobs/generator.js', import.meta.url);

describe('the manual clock', () => {
  it('makes a rate source produce exactly the rows due by the time the test sets', async () => {
    const q = await startQuery(rate, { clock: 'manual', clockStart: 5_000, params: { rowsPerSecond: 10 } });
    try {
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [], 'no time has passed: nothing is due');
      q.clock.advance(1000);
      await q.processAllAvailable();
      assert.deepEqual(
        q.sink<RateRow>('out').rows(),
        Array.from({ length: 10 }, (_, i) => ({ timestamp: 5_000 + (i + 1) * 100, value: i })),
      );
      q.clock.advance(250);
      await q.processAllAvailable();
      assert.equal(q.sink('out').rows().length, 12);
    } finally {
      await q.stop();
    }
  });

  it('spreads a rate source over partitions with a global sequence of values', async () => {
    const q = await startQuery(rate, { clock: 'manual', params: { rowsPerSecond: 20, partitions: 2 } });
    try {
      q.clock.advance(1000);
      await q.processAllAvailable();
      const values = q
        .sink<RateRow>('out')
        .rows()
        .map((r) => r.value)
        .sort((a, b) => a - b);
      assert.deepEqual(
        values,
        Array.from({ length: 20 }, (_, i) => i),
      );
    } finally {
      await q.stop();
    }
  });

  it('cuts epochs at the checkpoint interval and commits each once every sink partition passed it', async () => {
    const q = await startQuery(generator, {
      clock: 'manual',
      params: { rowsPerSecond: 20, partitions: 2, checkpointInterval: '1 second' },
    });
    const committed: number[] = [];
    q.on('epochCommitted', (e) => committed.push(e));
    try {
      q.clock.advance(500);
      await q.processAllAvailable();
      q.clock.advance(500); // the epoch 0 barrier is injected at +1 s, after the rows due by then
      await q.processAllAvailable();
      q.clock.advance(1000);
      await q.processAllAvailable();
      assert.deepEqual(committed, [0, 1]);
      const epochs = q.sink<{ partition: number; offset: number }>('out').epochs();
      assert.deepEqual(
        epochs.map((e) => e.epochId),
        [0, 1],
      );
      // 10 rows per partition per second; the filter keeps even offsets.
      const offsets = (epoch: number, partition: number) =>
        epochs[epoch]!.rows.filter((r) => r.partition === partition).map((r) => r.offset);
      assert.deepEqual(offsets(0, 0), [0, 2, 4, 6, 8]);
      assert.deepEqual(offsets(0, 1), [0, 2, 4, 6, 8]);
      assert.deepEqual(offsets(1, 0), [10, 12, 14, 16, 18]);
    } finally {
      await q.stop();
    }
  });

  it('reports a generator source backlog in its latest offset', async () => {
    const q = await startQuery(rate, {
      clock: 'manual',
      params: { rowsPerSecond: 10, progressInterval: '2 seconds' },
    });
    try {
      const progress = once(q, 'progress');
      q.clock.advance(2000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.deepEqual(p.sources[0]?.latestOffset, { 0: 20 });
      assert.equal(p.batchDuration, 2000);
    } finally {
      await q.stop();
    }
  });

  it('moves in one direction only', async () => {
    const q = await startQuery(rate, { clock: 'manual', clockStart: 1000 });
    try {
      assert.throws(() => q.clock.set(999), { code: 'INVALID_ARGUMENT' });
      assert.throws(() => q.clock.advance(-1), { code: 'INVALID_ARGUMENT' });
      q.clock.set(2000);
      assert.equal(q.clock.now(), 2000);
    } finally {
      await q.stop();
    }
  });
});
