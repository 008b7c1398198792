import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MillraceError, startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/aggregations.js';

const job = new URL('../fixtures/jobs/aggregations.js', import.meta.url);

describe('aggregation in real-time mode', () => {
  it('keeps every aggregate per key across partitions and emits each change in update mode', async () => {
    const q = await startQuery(job, { params: { case: 'per-card' } });
    try {
      const p = (card: string, amount: number): Payment => ({ card, amount, ts: 0 });
      // Card a arrives on both source partitions: the shuffle brings its rows to one task.
      q.source<Payment>('payments').addData([p('a', 5), p('b', 1)], 0);
      await q.processAllAvailable();
      q.source<Payment>('payments').addData([p('a', 7), p('a', 3)], 1);
      await q.processAllAvailable();
      const rows = q.sink<Record<string, unknown>>('out').rows();
      assert.equal(rows.length, 4, 'one output row per input row');
      const lastOf = (card: string) => rows.filter((r) => r.card === card).at(-1);
      assert.deepEqual(lastOf('a'), {
        card: 'a',
        n: 3,
        total: 15,
        mean: 5,
        low: 3,
        high: 7,
        firstAmount: 5,
        lastAmount: 3,
        spread: 4,
      });
      assert.deepEqual(lastOf('b'), {
        card: 'b',
        n: 1,
        total: 1,
        mean: 1,
        low: 1,
        high: 1,
        firstAmount: 1,
        lastAmount: 1,
        spread: 0,
      });
    } finally {
      await q.stop();
    }
  });

  it('estimates percentiles with an HDR histogram per group, and dead-letters values it cannot take', async () => {
    const q = await startQuery(job, { params: { case: 'percentiles' } });
    try {
      const rows = Array.from({ length: 1000 }, (_, i) => ({ card: 'a', amount: (i + 1) / 10, ts: 0 }));
      q.source<Payment>('payments').addData([...rows, { card: 'a', amount: -1, ts: 0 }]);
      await q.processAllAvailable();
      const last = q.sink<{ median: number; tail: number[] }>('out').rows().at(-1)!;
      assert.ok(Math.abs(last.median - 50) < 0.1, `median ${last.median}`);
      assert.ok(Math.abs(last.tail[0]! - 90) < 1, `p90 ${last.tail[0]}`);
      assert.ok(Math.abs(last.tail[1]! - 99) < 1, `p99 ${last.tail[1]}`);
      assert.match(q.deadLetters()[0]?.error.message ?? '', /non-negative numbers, got -1/);
      assert.equal(q.deadLetters()[0]?.error.code, 'INVALID_ROW');
      assert.deepEqual(
        q.deadLetters()[0]?.row,
        { card: 'a', amount: -1, ts: 0 },
        'a dead letter keeps the whole row, columns the aggregation does not read included',
      );
    } finally {
      await q.stop();
    }
  });

  it('assigns a row to every sliding window it falls in, and closes each once in append mode', async () => {
    const q = await startQuery(job, { params: { case: 'sliding', mode: 'append' } });
    try {
      q.source<Payment>('payments').addData([
        { card: 'a', amount: 1, ts: 7_000 }, // windows [0,10) and [5,15)
        { card: 'a', amount: 1, ts: 12_000 }, // [5,15) and [10,20): watermark 12 s closes [0,10)
      ]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [{ card: 'a', window: { start: 0, end: 10_000 }, count: 1 }]);
      q.source<Payment>('payments').addData([{ card: 'a', amount: 1, ts: 30_000 }]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [
        { card: 'a', window: { start: 0, end: 10_000 }, count: 1 },
        { card: 'a', window: { start: 5_000, end: 15_000 }, count: 2 },
        { card: 'a', window: { start: 10_000, end: 20_000 }, count: 1 },
      ]);
    } finally {
      await q.stop();
    }
  });
});

describe('rows an aggregation cannot use', () => {
  it('fail the query on an event time that is not a time, naming the column and value, INVALID_ROW on the cause', async () => {
    const q = await startQuery(job, { params: { case: 'sliding', mode: 'append' } });
    q.source('payments').addData([{ card: 'a', amount: 1, ts: 'soon' }]);
    await assert.rejects(q.awaitTermination(), (e: Error & { code?: string; cause?: { code?: string } }) => {
      assert.equal(e.code, 'TASK_FAILED');
      assert.match(e.message, /^event time column 'ts' holds "soon": expected ms since the epoch or a Date/);
      assert.equal(e.cause?.code, 'INVALID_ROW');
      return true;
    });
  });
});

describe('stateful plans that cannot run', () => {
  const refused: [string, string, RegExp][] = [
    [
      'append-without-watermark',
      'OUTPUT_MODE_NOT_SUPPORTED',
      /'append' is not supported for aggregate#1.*withWatermark\('ts'.*modes that work here: update/,
    ],
    ['watermark-on-other-column', 'OUTPUT_MODE_NOT_SUPPORTED', /withWatermark\('ts', delay\)/],
    [
      'complete-real-time',
      'OUTPUT_MODE_NOT_SUPPORTED',
      /'complete'.*needs micro-batch execution.*modes that work here: update/,
    ],
    [
      'two-aggregations',
      'OUTPUT_MODE_NOT_SUPPORTED',
      /'update' is not supported for aggregate#1: its rows go on to aggregate#2.*no output mode works here/,
    ],
  ];
  for (const [name, code, message] of refused) {
    it(`refuses ${name} at plan time with ${code}`, async () => {
      await assert.rejects(startQuery(job, { params: { case: name } }), (e: unknown) => {
        assert.ok(e instanceof MillraceError);
        assert.equal(e.code, code);
        assert.match(e.message, message);
        return true;
      });
    });
  }
});
