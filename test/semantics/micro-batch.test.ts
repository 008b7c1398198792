import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Sale } from '../fixtures/jobs/hourly-revenue.js';

const job = new URL('../fixtures/jobs/hourly-revenue.js', import.meta.url);

const at = (hh: number, mm: number) => Date.UTC(2026, 0, 15, hh, mm);
const sale = (amount: number, hh: number, mm: number): Sale => ({ amount, ts: at(hh, mm) });
const hour = (hh: number) => ({ start: at(hh, 0), end: at(hh + 1, 0) });
const row = (hh: number, total: number) => ({ window: hour(hh), total });

const batch1 = [sale(15, 14, 40), sale(10, 14, 30), sale(30, 15, 10)];
const batch2 = [sale(20, 15, 20)];

async function run(mode: string, check: (step: 1 | 2, rows: unknown[], epochs: unknown[]) => void) {
  const q = await startQuery(job, { params: { mode, trigger: 'microBatch' }, clock: 'manual' });
  try {
    q.source<Sale>('sales').addData(batch1);
    await q.processAllAvailable();
    check(1, q.sink('revenue').rows(), q.sink('revenue').epochs());
    q.source<Sale>('sales').addData(batch2);
    await q.processAllAvailable();
    check(2, q.sink('revenue').rows(), q.sink('revenue').epochs());
  } finally {
    await q.stop();
  }
}

describe('the worked example of docs/semantics.md, micro-batch mode', () => {
  it('update emits both windows after batch 1, then only [15:00,16:00) = 50', async () => {
    await run('update', (step, rows, epochs) => {
      if (step === 1) assert.deepEqual(rows, [row(14, 25), row(15, 30)]);
      else {
        assert.deepEqual(rows, [row(14, 25), row(15, 30), row(15, 50)]);
        assert.deepEqual(epochs, [
          { epochId: 0, rows: [row(14, 25), row(15, 30)] },
          // Batch 1 had no data: it ran because batch 0 moved the watermark (to 14:55).
          { epochId: 2, rows: [row(15, 50)] },
        ]);
      }
    });
  });

  it('complete emits the whole result table at every batch', async () => {
    await run('complete', (step, rows) => {
      if (step === 1) assert.deepEqual(rows, [row(14, 25), row(15, 30)]);
      else assert.deepEqual(rows, [row(14, 25), row(15, 50)]);
    });
  });

  it('append emits [14:00,15:00) = 25 once the 15:05 watermark is in force, in the no-data batch', async () => {
    await run('append', (step, rows, epochs) => {
      if (step === 1) assert.deepEqual(rows, []);
      else {
        assert.deepEqual(rows, [row(14, 25)]);
        assert.deepEqual(epochs, [{ epochId: 3, rows: [row(14, 25)] }], 'batch 3 had no data');
      }
    });
  });

  it('reports one progress per batch, with its id, rows and watermark; a batch without data follows each move of the watermark', async () => {
    const q = await startQuery(job, { params: { mode: 'append', trigger: 'microBatch' }, clock: 'manual' });
    const progress: StreamingQueryProgress[] = [];
    q.on('progress', (p) => progress.push(p));
    try {
      q.source<Sale>('sales').addData(batch1);
      await q.processAllAvailable();
      q.source<Sale>('sales').addData(batch2);
      await q.processAllAvailable();
      assert.deepEqual(
        progress.map((p) => [p.batchId, p.numInputRows, p.eventTime.watermark]),
        [
          [0, 3, new Date(0).toISOString()],
          [1, 0, new Date(at(14, 55)).toISOString()],
          [2, 1, new Date(at(14, 55)).toISOString()],
          [3, 0, new Date(at(15, 5)).toISOString()],
        ],
      );
      assert.deepEqual(progress[2]?.sources[0]?.startOffset, { 0: 3 });
      assert.deepEqual(progress[2]?.sources[0]?.endOffset, { 0: 4 });
    } finally {
      await q.stop();
    }
  });
});
