import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type StreamingQuery, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Click, Impression } from '../fixtures/jobs/joins.js';

const job = new URL('../fixtures/jobs/joins.js', import.meta.url);

const imp = (k: string, s: number, lv: number): Impression => ({ k, lt: s * 1000, lv });
const click = (k: string, s: number, rv: number): Click => ({ k, rt: s * 1000, rv });

async function stateRows(q: StreamingQuery): Promise<number> {
  const progress = once(q, 'progress');
  q.clock.advance(1000);
  const [p] = (await progress) as [StreamingQueryProgress];
  assert.equal(p.stateOperators[0]?.operatorName, 'symmetricHashJoin');
  return p.stateOperators[0]!.numRowsTotal;
}

describe('stream–stream join', () => {
  it('keeps each row until the watermark rules out a match, then emits an unmatched left row alone', async () => {
    // Watermark delay 2 s on both sides; a pair matches when rt ∈ [lt − 1 s, lt + 3 s].
    const q = await startQuery(job, { params: { type: 'leftOuter' }, clock: 'manual' });
    const left = (rows: Impression[]) => q.source<Impression>('impressions').addData(rows);
    const right = (rows: Click[]) => q.source<Click>('clicks').addData(rows);
    // Partitions emit independently: rows in the order of their left row.
    const out = () =>
      q
        .sink<Record<string, unknown>>('out')
        .rows()
        .sort((a, b) => Number(a.lv) - Number(b.lv));
    try {
      left([imp('a', 10, 1)]);
      await q.processAllAvailable();
      left([imp('x', 14.5, 2)]);
      right([click('x', 14.5, 3)]);
      await q.processAllAvailable(); // watermark 12.5 s: a@10 can still meet a click up to 13 s
      right([click('a', 13, 4)]);
      await q.processAllAvailable();
      assert.deepEqual(out(), [
        { k: 'a', lt: 10_000, lv: 1, rt: 13_000, rv: 4 },
        { k: 'x', lt: 14_500, lv: 2, rt: 14_500, rv: 3 },
      ]);
      left([imp('y', 15.5, 5)]);
      right([click('y', 15.5, 6)]);
      await q.processAllAvailable(); // watermark 13.5 s: a@10 is evicted (it matched: nothing more out)
      assert.equal(await stateRows(q), 5);
      left([imp('a', 14, 7), imp('u', 14, 8)]); // a@14 meets click a@13, which is kept until 14 s
      await q.processAllAvailable();
      assert.equal(out().length, 4);
      assert.deepEqual(out()[3], { k: 'a', lt: 14_000, lv: 7, rt: 13_000, rv: 4 }, 'at the lower bound');
      left([imp('z', 18.5, 9)]);
      right([click('z', 18.5, 10)]);
      await q.processAllAvailable(); // watermark 16.5 s: u@14 could still meet a click up to 17 s
      assert.ok(!out().some((r) => r.k === 'u'), 'u@14 is not out before it can no longer match');
      right([click('u', 16.5, 13)]); // at the watermark: late, though it would match u@14
      await q.processAllAvailable();
      assert.deepEqual(
        q.lateRows().map((l) => l.row),
        [click('u', 16.5, 13)],
      );
      left([imp('end', 100, 11)]);
      right([click('end', 100, 12)]);
      await q.processAllAvailable();
      assert.deepEqual(
        out().filter((r) => r.k === 'u'),
        [{ k: 'u', lt: 14_000, lv: 8 }],
      );
      assert.equal(await stateRows(q), 2, 'only the end rows are left');
    } finally {
      await q.stop();
    }
  });

  it('emits an unmatched right row alone in a right outer join, in micro-batch mode too', async () => {
    const q = await startQuery(job, {
      params: { type: 'rightOuter', trigger: 'microBatch' },
      clock: 'manual',
    });
    try {
      q.source<Impression>('impressions').addData([imp('a', 10, 1)]);
      q.source<Click>('clicks').addData([click('a', 12, 2), click('b', 12, 3), click('a', 20, 4)]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [{ k: 'a', lt: 10_000, lv: 1, rt: 12_000, rv: 2 }]);
      q.source<Impression>('impressions').addData([imp('c', 30, 5)]);
      // The next batches run with watermark 8 s, then 18 s: b@12 can no longer match (12 s + 1 s ≤
      // 18 s), a@20 still can.
      await q.processAllAvailable();
      const rows = q.sink('out').rows();
      assert.deepEqual(rows.slice(1), [{ k: 'b', rt: 12_000, rv: 3 }]);
    } finally {
      await q.stop();
    }
  });

  it('refuses update and complete output modes at plan time, naming append', async () => {
    for (const mode of ['update', 'complete']) {
      await assert.rejects(startQuery(job, { params: { mode, trigger: 'microBatch' } }), {
        code: 'OUTPUT_MODE_NOT_SUPPORTED',
        message: new RegExp(
          `output mode '${mode}' is not supported for streamJoin#\\d+: .*modes that work here: append$`,
        ),
      });
    }
  });

  it('refuses a side without a watermark, or a join without a time range, at plan time', async () => {
    await assert.rejects(startQuery(job, { params: { watermarks: 'left' } }), {
      code: 'STREAM_JOIN_UNBOUNDED_STATE',
      message: /streamJoin#\d+: the right input has no watermark on 'rt'.*withWatermark\('rt', delay\)/,
    });
    await assert.rejects(startQuery(job, { params: { between: 'none' } }), {
      code: 'STREAM_JOIN_UNBOUNDED_STATE',
      message: /needs a time-range condition/,
    });
  });

  it('shuffles both sides by the key into the join stage', async () => {
    const q = await startQuery(job);
    try {
      const plan = q.explain();
      assert.match(plan, /-> hash shuffle by k to stage 2[\s\S]*-> hash shuffle by k to stage 2/);
      assert.match(
        plan,
        /Stage 2 \(2 partitions\) <- shuffle from stage 0 \+ shuffle from stage 1\n {2}streamJoin#\d+/,
      );
    } finally {
      await q.stop();
    }
  });
});
