import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/keyed-windows.js';

const job = new URL('../fixtures/jobs/keyed-windows.js', import.meta.url);
const DELAY = 2000;
const SIZE = 10_000;
const SLIDE = 5_000;
/** Each generated case lives in its own stretch of time, far after the previous one. */
const CASE_SPAN = 1e9;

interface Out {
  key: string;
  window: { start: number; end: number };
  n: number;
  s: number;
}

/** A stream of rows whose event time wanders forward with random lateness. */
const streamArb = fc.array(
  fc.record({
    key: fc.constantFrom('a', 'b', 'c'),
    v: fc.integer({ min: 1, max: 9 }),
    step: fc.integer({ min: -6000, max: 4000 }),
    /** Wait for everything added so far to be processed after this row (watermarks propagate). */
    pause: fc.boolean(),
  }),
  { minLength: 1, maxLength: 40 },
);

/** What a batch engine computes over `rows`: per key, every sliding window each row is in. */
function batchAggregate(rows: Event[]): Map<string, { n: number; s: number }> {
  const out = new Map<string, { n: number; s: number }>();
  for (const r of rows) {
    const last = Math.floor(r.ts / SLIDE) * SLIDE;
    for (let start = last; start > r.ts - SIZE; start -= SLIDE) {
      const k = `${r.key}|${start}`;
      const g = out.get(k) ?? { n: 0, s: 0 };
      g.n++;
      g.s += r.v;
      out.set(k, g);
    }
  }
  return out;
}

describe('windowed aggregation, property-based', () => {
  it('emits in append mode exactly the batch result over the rows that were not late, and forgets closed windows', async () => {
    const cases = fc.sample(streamArb, { numRuns: 60, seed: 20261129 });
    const q = await startQuery(job, {
      clock: 'manual',
      params: { delay: DELAY, size: `${SIZE} ms`, slide: `${SLIDE} ms` },
    });
    try {
      const all: Event[][] = cases.map((steps, c) => {
        let t = (c + 1) * CASE_SPAN;
        return steps.map(({ key, v, step }) => {
          t = Math.max((c + 1) * CASE_SPAN, t + step);
          return { key: `${c}:${key}`, v, ts: t };
        });
      });
      for (const [c, rows] of all.entries()) {
        for (const [i, row] of rows.entries()) {
          q.source<Event>('events').addData([row]);
          if (cases[c]![i]!.pause) await q.processAllAvailable();
        }
      }
      // A last row far ahead moves the watermark past every window of every case.
      q.source<Event>('events').addData([{ key: 'end', v: 0, ts: (cases.length + 2) * CASE_SPAN }]);
      await q.processAllAvailable();

      const late = q.lateRows().map((l) => l.row as Event);
      assert.ok(late.length > 0, 'the generated streams have late rows');
      // Late rows by content, counted: a case may hold two equal rows, of which one came after the
      // watermark passed it and the other before.
      const lateCount = new Map<string, number>();
      for (const r of late) lateCount.set(JSON.stringify(r), (lateCount.get(JSON.stringify(r)) ?? 0) + 1);
      const out = q.sink<Out>('out').rows();
      for (const [c, rows] of all.entries()) {
        // Every late row was late by the rows that came before it: of equal rows, at least as many
        // could have been late as were.
        let maxBefore = Number.NEGATIVE_INFINITY;
        const couldBeLate = new Map<string, number>();
        for (const r of rows) {
          const k = JSON.stringify(r);
          if (r.ts <= maxBefore - DELAY) couldBeLate.set(k, (couldBeLate.get(k) ?? 0) + 1);
          maxBefore = Math.max(maxBefore, r.ts);
        }
        const left = new Map<string, number>();
        for (const r of rows) {
          const k = JSON.stringify(r);
          const n = lateCount.get(k) ?? 0;
          if (n > 0) {
            assert.ok((couldBeLate.get(k) ?? 0) >= n, `case ${c}: ${r.ts} was not late`);
            left.set(k, n);
          }
        }
        // The batch result over the rows that were not late: equal rows are one another's stand-ins.
        const kept = rows.filter((r) => {
          const k = JSON.stringify(r);
          const n = left.get(k) ?? 0;
          if (n === 0) return true;
          left.set(k, n - 1);
          return false;
        });
        const expected = batchAggregate(kept);
        const got = new Map<string, { n: number; s: number }>();
        for (const o of out.filter((o) => o.key.startsWith(`${c}:`))) {
          const k = `${o.key}|${o.window.start}`;
          assert.ok(!got.has(k), `case ${c}: window ${k} emitted twice`);
          assert.equal(o.window.end - o.window.start, SIZE);
          got.set(k, { n: o.n, s: o.s });
        }
        assert.deepEqual(got, expected, `case ${c}`);
      }

      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      // Only the windows of the last row are still open: everything else was evicted.
      assert.equal(p.stateOperators[0]?.numRowsTotal, SIZE / SLIDE);
      assert.equal(p.stateOperators[0]?.numRowsDroppedByWatermark, late.length);
    } finally {
      await q.stop();
    }
  });
});
