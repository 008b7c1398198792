import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Sale } from '../fixtures/jobs/hourly-revenue.js';

const job = new URL('../fixtures/jobs/hourly-revenue.js', import.meta.url);

const at = (hh: number, mm: number) => Date.UTC(2026, 0, 15, hh, mm);
const sale = (amount: number, hh: number, mm: number): Sale => ({ amount, ts: at(hh, mm) });
const hour = (hh: number) => ({ start: at(hh, 0), end: at(hh + 1, 0) });

const batch1 = [sale(15, 14, 40), sale(10, 14, 30), sale(30, 15, 10)];
const batch2 = [sale(20, 15, 20)];

describe('the worked example of docs/semantics.md, real-time mode', () => {
  it('update mode emits one changed row per input row: 15, 25, 30, 50', async () => {
    const q = await startQuery(job, { params: { mode: 'update' } });
    try {
      q.source<Sale>('sales').addData([...batch1, ...batch2]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('revenue').rows(), [
        { window: hour(14), total: 15 },
        { window: hour(14), total: 25 },
        { window: hour(15), total: 30 },
        { window: hour(15), total: 50 },
      ]);
    } finally {
      await q.stop();
    }
  });

  it('append mode emits [14:00,15:00) = 25 once the 15:20 row moves the watermark past 15:00', async () => {
    const q = await startQuery(job, { params: { mode: 'append' } });
    try {
      q.source<Sale>('sales').addData(batch1);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('revenue').rows(), [], 'both windows can still change');
      q.source<Sale>('sales').addData(batch2);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('revenue').rows(), [{ window: hour(14), total: 25 }]);
      q.source<Sale>('sales').addData([sale(1, 15, 21)]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('revenue').rows(), [{ window: hour(14), total: 25 }], 'and never again');
    } finally {
      await q.stop();
    }
  });

  it('drops a row whose window the watermark closed, counts it, and evicts closed windows', async () => {
    const q = await startQuery(job, { params: { mode: 'update', onLateRow: 'sideOutput' }, clock: 'manual' });
    try {
      q.source<Sale>('sales').addData([...batch1, ...batch2]);
      await q.processAllAvailable();
      // The watermark is 15:05 now: a 14:50 row is late for [14:00,15:00), which is gone; a 15:05
      // row is at the watermark, but its window [15:00,16:00) is open, so it counts (Spark's rule).
      q.source<Sale>('sales').addData([sale(5, 14, 50), sale(7, 15, 5)]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('revenue').rows().slice(4), [{ window: hour(15), total: 57 }]);
      assert.deepEqual(
        q.lateRows().map((l) => l.row),
        [sale(5, 14, 50)],
      );
      assert.equal(q.lateRows()[0]?.watermark, at(15, 5));
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.equal(p.stateOperators.length, 1);
      const s = p.stateOperators[0]!;
      assert.equal(s.operatorName, 'stateStoreSave');
      assert.equal(s.numRowsDroppedByWatermark, 1);
      assert.equal(s.numRowsTotal, 1, 'only [15:00,16:00) is left');
      assert.equal(s.numRowsRemoved, 1, '[14:00,15:00) was evicted');
      assert.equal(s.numRowsUpdated, 5);
      assert.ok(s.memoryUsedBytes > 0);
      assert.deepEqual(p.eventTime, {
        avg: new Date(
          Math.round((at(14, 40) + at(14, 30) + at(15, 10) + at(15, 20) + at(14, 50) + at(15, 5)) / 6),
        ).toISOString(),
        max: new Date(at(15, 20)).toISOString(),
        min: new Date(at(14, 30)).toISOString(),
        watermark: new Date(at(15, 5)).toISOString(),
      });
    } finally {
      await q.stop();
    }
  });
});
