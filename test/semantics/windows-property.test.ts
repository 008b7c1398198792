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
    step: fc.integer({ min: -14000, max: 16000 }),
    /** Wait for everything added so far to be processed after this row (watermarks propagate). */
    pause: fc.boolean(),
  }),
  { minLength: 1, maxLength: 40 },
);

/** The watermark rows are judged late by, when each arrives, and the row. */
interface Arrival {
  row: Event;
  late: number;
}

/**
 * What a batch engine computes over the rows, leaving out each row's windows that were already
 * closed when it arrived (Spark's predicate: window end at or below the watermark).
 */
function batchAggregate(rows: Arrival[]): Map<string, { n: number; s: number }> {
  const out = new Map<string, { n: number; s: number }>();
  for (const { row: r, late } of rows) {
    const last = Math.floor(r.ts / SLIDE) * SLIDE;
    for (let start = last; start > r.ts - SIZE; start -= SLIDE) {
      if (start + SIZE <= late) continue;
      const k = `${r.key}|${start}`;
      const g = out.get(k) ?? { n: 0, s: 0 };
      g.n++;
      g.s += r.v;
      out.set(k, g);
    }
  }
  return out;
}

/** A row is late (to the late rows, counted) when every window of it was closed. */
const whollyLate = ({ row, late }: Arrival) => Math.floor(row.ts / SLIDE) * SLIDE + SIZE <= late;

const modes = [
  // Micro-batch: the rows added between two pauses are one batch, judged by the watermark the
  // batches before it reached (the batch without data after each moves it there).
  { trigger: 'microBatch', runs: 60, everyRow: false },
  // Real-time: processing everything after each row puts the watermark exactly where the rows
  // before it moved it.
  { trigger: 'realTime', runs: 25, everyRow: true },
] as const;

describe('windowed aggregation, property-based', () => {
  for (const mode of modes) {
    it(`emits in append mode exactly the batch result over each row's windows still open, and forgets closed windows (${mode.trigger})`, async () => {
      const cases = fc.sample(streamArb, { numRuns: mode.runs, seed: 20261129 });
      const q = await startQuery(job, {
        clock: 'manual',
        params: { delay: DELAY, size: `${SIZE} ms`, slide: `${SLIDE} ms`, trigger: mode.trigger },
      });
      const progress: StreamingQueryProgress[] = [];
      q.on('progress', (p: StreamingQueryProgress) => progress.push(p));
      try {
        const all: Event[][] = cases.map((steps, c) => {
          let t = (c + 1) * CASE_SPAN;
          return steps.map(({ key, v, step }) => {
            t = Math.max((c + 1) * CASE_SPAN, t + step);
            return { key: `${c}:${key}`, v, ts: t };
          });
        });
        const arrivals: Arrival[][] = all.map(() => []);
        let processedMax = Number.NEGATIVE_INFINITY;
        let addedMax = Number.NEGATIVE_INFINITY;
        for (const [c, rows] of all.entries()) {
          for (const [i, row] of rows.entries()) {
            q.source<Event>('events').addData([row]);
            arrivals[c]!.push({ row, late: processedMax - DELAY });
            addedMax = Math.max(addedMax, row.ts);
            if (mode.everyRow || cases[c]![i]!.pause) {
              await q.processAllAvailable();
              processedMax = addedMax;
            }
          }
        }
        // A last row far ahead moves the watermark past every window of every case.
        q.source<Event>('events').addData([{ key: 'end', v: 0, ts: (cases.length + 2) * CASE_SPAN }]);
        await q.processAllAvailable();

        const late = q.lateRows().map((l) => l.row as Event);
        const expectedLate = arrivals.flat().filter(whollyLate);
        assert.ok(expectedLate.length > 0, 'the generated streams have late rows');
        const byContent = (rows: Event[]) => rows.map((r) => JSON.stringify(r)).sort();
        assert.deepEqual(byContent(late), byContent(expectedLate.map((a) => a.row)));
        const out = q.sink<Out>('out').rows();
        for (const [c, rows] of arrivals.entries()) {
          const expected = batchAggregate(rows);
          const got = new Map<string, { n: number; s: number }>();
          for (const o of out.filter((o) => o.key.startsWith(`${c}:`))) {
            const k = `${o.key}|${o.window.start}`;
            assert.ok(!got.has(k), `case ${c}: window ${k} emitted twice`);
            assert.equal(o.window.end - o.window.start, SIZE);
            got.set(k, { n: o.n, s: o.s });
          }
          assert.deepEqual(got, expected, `case ${c}`);
        }

        if (mode.trigger === 'realTime') {
          // Real-time progress comes with the clock; a micro-batch's with each batch.
          const next = once(q, 'progress');
          q.clock.advance(1000);
          await next;
        }
        const last = progress.at(-1)!;
        // Only the windows of the last row are still open: everything else was evicted.
        assert.equal(last.stateOperators[0]?.numRowsTotal, SIZE / SLIDE);
        const dropped = progress.reduce(
          (n, p) => n + (p.stateOperators[0]?.numRowsDroppedByWatermark ?? 0),
          0,
        );
        assert.equal(dropped, late.length);
      } finally {
        await q.stop();
      }
    });
  }
});
