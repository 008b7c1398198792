import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startQuery } from '../../src/index.js';
import type { Ev } from '../fixtures/jobs/union.js';

const job = new URL('../fixtures/jobs/union.js', import.meta.url);
const ev = (side: string, s: number): Ev => ({ side, ts: s * 1000 });

describe('union', () => {
  it('brings the rows of two sources into one stream, each side in its order', async () => {
    const q = await startQuery(job);
    try {
      q.source<Ev>('left').addData([ev('l0', 1), ev('l0', 2)], 0);
      q.source<Ev>('left').addData([ev('l1', 3)], 1);
      q.source<Ev>('right').addData([ev('r', 4), ev('r', 5)]);
      await q.processAllAvailable();
      const rows = q.sink<Ev & { seen: boolean }>('out').rows();
      assert.equal(rows.length, 5);
      assert.ok(rows.every((r) => r.seen));
      const order = (side: string) => rows.filter((r) => r.side === side).map((r) => r.ts);
      assert.deepEqual(order('l0'), [1000, 2000]);
      assert.deepEqual(order('r'), [4000, 5000]);
      assert.match(q.explain(), /Stage 2 \(\d partitions?\) <- shuffle from stage 0 \+ shuffle from stage 1/);
    } finally {
      await q.stop();
    }
  });

  it('holds the watermark at the slower input under the min policy', async () => {
    const q = await startQuery(job, { params: { case: 'windowed' } });
    try {
      q.source<Ev>('left').addData([ev('l', 1)]);
      q.source<Ev>('right').addData([ev('r', 2)]);
      await q.processAllAvailable();
      q.source<Ev>('left').addData([ev('l', 25)]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [], 'right is at 2 s: [0,10) stays open');
      q.source<Ev>('right').addData([ev('r', 12)]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [{ window: { start: 0, end: 10_000 }, n: 2 }]);
    } finally {
      await q.stop();
    }
  });

  it('follows the faster input under the max policy', async () => {
    const q = await startQuery(job, { params: { case: 'windowed', policy: 'max' } });
    try {
      // One at a time: under the max policy, l@1 would be late if right's 2 s watermark came first.
      q.source<Ev>('left').addData([ev('l', 1)]);
      await q.processAllAvailable();
      q.source<Ev>('right').addData([ev('r', 2)]);
      await q.processAllAvailable();
      q.source<Ev>('left').addData([ev('l', 25)]); // right is still at 2 s: the max is 25 s
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [{ window: { start: 0, end: 10_000 }, n: 2 }]);
    } finally {
      await q.stop();
    }
  });

  it('leaves an input that stayed silent past its idle timeout out of the minimum', async () => {
    const q = await startQuery(job, {
      params: { case: 'windowed', idleTimeout: '5 seconds' },
      clock: 'manual',
    });
    try {
      q.source<Ev>('left').addData([ev('l', 1), ev('l', 25)]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [], 'right has not been silent for 5 s yet');
      q.clock.advance(5000);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [{ window: { start: 0, end: 10_000 }, n: 1 }]);
    } finally {
      await q.stop();
    }
  });

  it('refuses two branches of one stream, and two sources of one name', async () => {
    await assert.rejects(startQuery(job, { params: { case: 'same-stream' } }), {
      code: 'UNSUPPORTED_OPERATION',
      message: /union#\d+ joins two branches of the same stream \(both read source#0\)/,
    });
    await assert.rejects(startQuery(job, { params: { rightName: 'left' } }), {
      code: 'DUPLICATE_SOURCE_NAME',
    });
  });
});
