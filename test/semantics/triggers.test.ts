import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type RateRow, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Sale } from '../fixtures/jobs/hourly-revenue.js';

const triggers = new URL('../fixtures/jobs/triggers.js', import.meta.url);
const revenue = new URL('../fixtures/jobs/hourly-revenue.js', import.meta.url);
const rows = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ n: from + i }));

describe('micro-batch triggers', () => {
  it('availableNow processes what was there at start in batches within the rate limit, then stops', async () => {
    const q = await startQuery(triggers, {
      params: { trigger: 'availableNow', maxRowsPerTrigger: 3 },
      initialData: { in: { 0: rows(0, 5), 1: rows(5, 7) } },
    });
    assert.equal(await q.awaitTermination(10_000), true, 'the query stopped by itself');
    assert.equal(q.exception, null);
    const epochs = q.sink<{ n: number }>('out').epochs();
    assert.deepEqual(
      epochs.map((e) => e.rows.length),
      [3, 3, 1],
      'seven rows, three a batch',
    );
    assert.deepEqual(
      epochs
        .flatMap((e) => e.rows)
        .map((r) => r.n)
        .sort((a, b) => a - b),
      [0, 1, 2, 3, 4, 5, 6],
    );
  });

  it('once processes everything available in one batch, ignoring the rate limit, then stops', async () => {
    const q = await startQuery(triggers, {
      params: { trigger: 'once', maxRowsPerTrigger: 2 },
      initialData: { in: rows(0, 5) },
    });
    assert.equal(await q.awaitTermination(10_000), true);
    assert.deepEqual(
      q
        .sink('out')
        .epochs()
        .map((e) => e.rows.length),
      [5],
    );
  });

  it('availableNow runs the trailing no-data batch that emits what the watermark closed', async () => {
    const at = (hh: number, mm: number) => Date.UTC(2026, 0, 15, hh, mm);
    const sale = (amount: number, hh: number, mm: number): Sale => ({ amount, ts: at(hh, mm) });
    const q = await startQuery(revenue, {
      params: { mode: 'append', trigger: 'microBatch' },
      initialData: { sales: [sale(15, 14, 40), sale(10, 14, 30), sale(30, 15, 10), sale(20, 15, 20)] },
      clock: 'manual',
    });
    try {
      await q.processAllAvailable();
      assert.deepEqual(q.sink('revenue').epochs(), [
        { epochId: 1, rows: [{ window: { start: at(14, 0), end: at(15, 0) }, total: 25 }] },
      ]);
    } finally {
      await q.stop();
    }
  });

  it('processingTime starts a batch each interval of the query clock when data arrived', async () => {
    const q = await startQuery(triggers, { params: { trigger: 'interval' }, clock: 'manual' });
    try {
      q.source('in').addData(rows(0, 3));
      const first = once(q, 'progress');
      q.clock.advance(1000);
      const [p0] = (await first) as [StreamingQueryProgress];
      assert.equal(p0.batchId, 0);
      assert.equal(p0.numInputRows, 3);
      q.clock.advance(1000); // no new data: no batch
      q.source('in').addData(rows(3, 5), 1);
      const second = once(q, 'progress');
      q.clock.advance(1000);
      const [p1] = (await second) as [StreamingQueryProgress];
      assert.equal(p1.batchId, 1);
      assert.equal(p1.numInputRows, 2);
      assert.deepEqual(
        q
          .sink('out')
          .epochs()
          .map((e) => e.epochId),
        [0, 1],
      );
    } finally {
      await q.stop();
    }
  });

  it('takes from a rate source exactly the rows due by the batch', async () => {
    const q = await startQuery(triggers, {
      params: { trigger: 'interval', source: 'rate' },
      clock: 'manual',
    });
    try {
      const first = once(q, 'progress');
      q.clock.advance(1000);
      await first;
      const values = q
        .sink<RateRow>('out')
        .rows()
        .map((r) => r.value)
        .sort((a, b) => a - b);
      assert.deepEqual(
        values,
        Array.from({ length: 10 }, (_, i) => i),
      );
    } finally {
      await q.stop();
    }
  });
});
