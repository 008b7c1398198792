import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Tx } from '../fixtures/jobs/dedup.js';

const job = new URL('../fixtures/jobs/dedup.js', import.meta.url);
const tx = (txId: string, s: number, n?: number): Tx => ({
  txId,
  ts: s * 1000,
  ...(n === undefined ? {} : { n }),
});
const ids = (rows: Tx[]) => rows.map((r) => `${r.txId}@${r.ts / 1000}`).sort();

describe('deduplication', () => {
  for (const trigger of ['realTime', 'microBatch']) {
    it(`passes the first row of each key on and drops repeats, across partitions (${trigger})`, async () => {
      const q = await startQuery(job, { params: { case: 'plain', trigger } });
      try {
        q.source<Tx>('txs').addData([tx('a', 1), tx('b', 2), tx('a', 3)], 0);
        q.source<Tx>('txs').addData([tx('b', 4), tx('c', 5)], 1);
        await q.processAllAvailable();
        q.source<Tx>('txs').addData([tx('c', 6), tx('d', 7)], 0);
        await q.processAllAvailable();
        const out = q.sink<Tx>('out').rows();
        assert.deepEqual(out.map((r) => r.txId).sort(), ['a', 'b', 'c', 'd']);
        assert.ok(
          out.some((r) => r.txId === 'a' && r.ts === 1000),
          'the first a is the one kept',
        );
      } finally {
        await q.stop();
      }
    });
  }

  it('treats the whole row as the key without columns', async () => {
    const q = await startQuery(job, { params: { case: 'whole-row' } });
    try {
      q.source<Tx>('txs').addData([tx('a', 1, 1), tx('a', 1, 1), tx('a', 1, 2)]);
      await q.processAllAvailable();
      assert.equal(q.sink('out').rows().length, 2);
    } finally {
      await q.stop();
    }
  });

  for (const trigger of ['realTime', 'microBatch']) {
    it(`over the whole row, is bounded by a watermarked column of the row, as Spark's dropDuplicates() (${trigger})`, async () => {
      const q = await startQuery(job, {
        params: { case: 'whole-row-watermarked', trigger },
        clock: 'manual',
      });
      try {
        q.source<Tx>('txs').addData([tx('a', 1), tx('a', 1), tx('b', 5)]);
        await q.processAllAvailable();
        q.source<Tx>('txs').addData([tx('c', 30)]); // watermark 20 s: a@1 and b@5 are forgotten
        await q.processAllAvailable();
        q.source<Tx>('txs').addData([tx('e', 2), tx('d', 25), tx('d', 25)]); // e@2: a new row, but late
        await q.processAllAvailable();
        assert.deepEqual(ids(q.sink<Tx>('out').rows()), ['a@1', 'b@5', 'c@30', 'd@25']);
        assert.deepEqual(ids(q.lateRows().map((l) => l.row as Tx)), ['e@2']);
        if (trigger === 'realTime') {
          // A real-time query reports progress by the clock; a micro-batch query after each batch.
          const progress = once(q, 'progress');
          q.clock.advance(1000);
          await progress;
        }
        const s = q.lastProgress!.stateOperators[0]!;
        assert.equal(s.numRowsTotal, 2, 'c@30 and d@25 are still remembered, a@1 and b@5 forgotten');
        assert.equal(
          q.recentProgress.reduce((n, p) => n + (p.stateOperators[0]?.numRowsDroppedByWatermark ?? 0), 0),
          1,
        );
      } finally {
        await q.stop();
      }
    });
  }

  it('over the whole row without the watermarked column, keeps every row and drops none as late', async () => {
    const q = await startQuery(job, { params: { case: 'whole-row-without-ts' }, clock: 'manual' });
    try {
      q.source<Tx>('txs').addData([tx('a', 1), tx('b', 5), tx('c', 30)]);
      await q.processAllAvailable();
      q.source<Tx>('txs').addData([tx('a', 2), tx('e', 2)]); // a repeats; e is new (no event time)
      await q.processAllAvailable();
      assert.deepEqual(
        q
          .sink<{ txId: string }>('out')
          .rows()
          .map((r) => r.txId)
          .sort(),
        ['a', 'b', 'c', 'e'],
      );
      assert.deepEqual(q.lateRows(), []);
    } finally {
      await q.stop();
    }
  });

  it('with a watermark on a key column, drops late rows and forgets keys behind the watermark', async () => {
    const q = await startQuery(job, { params: { case: 'watermarked' }, clock: 'manual' });
    try {
      q.source<Tx>('txs').addData([tx('a', 1), tx('a', 1), tx('b', 5)]);
      await q.processAllAvailable();
      q.source<Tx>('txs').addData([tx('c', 30)]); // watermark 20 s: a@1 and b@5 are forgotten
      await q.processAllAvailable();
      q.source<Tx>('txs').addData([tx('a', 1), tx('d', 25), tx('d', 25)]); // a@1 is late now
      await q.processAllAvailable();
      assert.deepEqual(ids(q.sink<Tx>('out').rows()), ['a@1', 'b@5', 'c@30', 'd@25']);
      assert.deepEqual(ids(q.lateRows().map((l) => l.row as Tx)), ['a@1']);
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      const s = p.stateOperators[0]!;
      assert.equal(s.operatorName, 'dedupe');
      assert.equal(s.numRowsTotal, 2, 'c@30 and d@25 are still remembered');
      assert.equal(s.numRowsRemoved, 2);
      assert.equal(s.numRowsDroppedByWatermark, 1);
    } finally {
      await q.stop();
    }
  });

  it('within the watermark, keeps a key until its event time plus the delay is behind the watermark', async () => {
    const q = await startQuery(job, { params: { case: 'within' } });
    try {
      q.source<Tx>('txs').addData([tx('a', 100), tx('a', 105)]); // same key, later time: a duplicate
      await q.processAllAvailable();
      q.source<Tx>('txs').addData([tx('z', 115)]); // watermark 105: a (kept until 110) is still known
      await q.processAllAvailable();
      q.source<Tx>('txs').addData([tx('a', 112)]);
      await q.processAllAvailable();
      q.source<Tx>('txs').addData([tx('y', 125)]); // watermark 115: a is forgotten
      await q.processAllAvailable();
      q.source<Tx>('txs').addData([tx('a', 120)]);
      await q.processAllAvailable();
      assert.deepEqual(ids(q.sink<Tx>('out').rows()), ['a@100', 'a@120', 'y@125', 'z@115']);
    } finally {
      await q.stop();
    }
  });

  it('refuses dropDuplicatesWithinWatermark without a watermark, and complete mode', async () => {
    await assert.rejects(startQuery(job, { params: { case: 'within-without-watermark' } }), {
      code: 'UNSUPPORTED_OPERATION',
      message: /needs withWatermark/,
    });
    await assert.rejects(
      startQuery(job, { params: { case: 'plain', mode: 'complete', trigger: 'microBatch' } }),
      {
        code: 'OUTPUT_MODE_NOT_SUPPORTED',
        message: /dedup#1.*no result table.*modes that work here: append, update/,
      },
    );
  });
});
