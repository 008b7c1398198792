import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type StreamingQuery, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Payment, Rollup } from '../fixtures/jobs/chain-property.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/chain-property.js', import.meta.url);
const DELAY = 2000;
const INNER = 5000;
const OUTER = 15_000;
/** Each generated case lives in its own stretch of time, far after the previous one. */
const CASE_SPAN = 1e9;

/** A stream of rows whose event time wanders forward with random lateness, some of them replays. */
const streamArb = fc.array(
  fc.record({
    key: fc.constantFrom('a', 'b'),
    v: fc.integer({ min: 1, max: 9 }),
    step: fc.integer({ min: -14_000, max: 12_000 }),
    /** One row in five: send an earlier row of the case again (this one's fields unused) instead. */
    replay: fc.tuple(fc.integer({ min: 0, max: 4 }), fc.nat()).map(([r, i]) => (r === 0 ? i : null)),
    /** Wait for everything added so far to be processed after this row (watermarks propagate). */
    pause: fc.boolean(),
    /** After the pause, stop the query and start it again from its checkpoint. */
    restart: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  }),
  { minLength: 1, maxLength: 30 },
);

/** The row, and the watermark rows were judged late by when it arrived. */
interface Arrival {
  row: Payment;
  late: number;
}

/** What the chain must give for a case's arrivals, worked out one operator at a time. */
function model(arrivals: Arrival[]) {
  const seen = new Set<string>();
  let duplicates = 0;
  let late = 0;
  const inner = new Map<string, { key: string; start: number; n: number; s: number }>();
  for (const { row, late: w } of arrivals) {
    // Deduplication: the first row of an id passes, late or not.
    if (seen.has(row.id)) {
      duplicates++;
      continue;
    }
    seen.add(row.id);
    // The 5-s window: a row is late there once its window has closed (end at or below W).
    const start = Math.floor(row.ts / INNER) * INNER;
    if (start + INNER <= w) {
      late++;
      continue;
    }
    const k = `${row.key}|${start}`;
    const g = inner.get(k) ?? { key: row.key, start, n: 0, s: 0 };
    g.n++;
    g.s += row.v;
    inner.set(k, g);
  }
  // Every 5-s window reaches the 15-s one its last instant falls in: none is late there.
  const outer = new Map<string, Rollup>();
  for (const g of inner.values()) {
    const start = Math.floor((g.start + INNER - 1) / OUTER) * OUTER;
    const k = `${g.key}|${start}`;
    const o = outer.get(k) ?? { key: g.key, start, n: 0, s: 0 };
    o.n++;
    o.s += g.s;
    outer.set(k, o);
  }
  return { duplicates, late, outer };
}

const modes = [
  // Micro-batch: the rows added between two pauses are one batch, judged by the watermark the
  // batches before it reached.
  { trigger: 'microBatch', runs: 30, everyRow: false },
  // Real-time: processing everything after each row puts the watermark where the rows before it
  // moved it.
  { trigger: 'realTime', runs: 12, everyRow: true },
] as const;

describe('a chain of deduplication and two window aggregations, property-based, with restarts', () => {
  const tempDir = tempDirs('millrace-chain-property');

  for (const mode of modes) {
    it(`emits exactly what the operators, one after the other, make of the rows, once, across restarts (${mode.trigger})`, async () => {
      const cases = fc.sample(streamArb, { numRuns: mode.runs, seed: 20261203 });
      const checkpointLocation = tempDir();
      const progress: StreamingQueryProgress[] = [];
      const out: Rollup[] = [];
      const start = async () => {
        const q = await startQuery(job, {
          clock: 'manual',
          checkpointLocation,
          params: { trigger: mode.trigger },
        });
        q.on('progress', (p: StreamingQueryProgress) => progress.push(p));
        return q;
      };
      /** Real-time progress comes with the clock; a micro-batch's with each batch. */
      const lastProgress = async (q: StreamingQuery) => {
        if (mode.trigger === 'realTime') {
          const next = once(q, 'progress');
          q.clock.advance(1000);
          await next;
        }
      };
      let q = await start();
      let restarts = 0;
      try {
        const arrivals: Arrival[][] = cases.map(() => []);
        let processedMax = Number.NEGATIVE_INFINITY;
        let addedMax = Number.NEGATIVE_INFINITY;
        for (const [c, steps] of cases.entries()) {
          let t = (c + 1) * CASE_SPAN;
          const sent: Payment[] = [];
          for (const [i, step] of steps.entries()) {
            let row: Payment;
            if (step.replay !== null && sent.length > 0) row = sent[step.replay % sent.length]!;
            else {
              t = Math.max((c + 1) * CASE_SPAN, t + step.step);
              row = { id: `${c}:${i}`, key: `${c}:${step.key}`, v: step.v, ts: t };
              sent.push(row);
            }
            q.source<Payment>('events').addData([row]);
            arrivals[c]!.push({ row, late: processedMax - DELAY });
            addedMax = Math.max(addedMax, row.ts);
            if (mode.everyRow || step.pause) {
              await q.processAllAvailable();
              processedMax = addedMax;
              if (step.restart) {
                await lastProgress(q);
                out.push(...q.sink<Rollup>('out').rows());
                await q.stop();
                q = await start();
                restarts++;
              }
            }
          }
        }
        // A last row far ahead moves the watermark past every window of every case.
        q.source<Payment>('events').addData([
          { id: 'end', key: 'end', v: 0, ts: (cases.length + 2) * CASE_SPAN },
        ]);
        await q.processAllAvailable();
        await lastProgress(q);
        out.push(...q.sink<Rollup>('out').rows());
        assert.ok(restarts >= 2, `the query restarted in the middle (${restarts} times)`);

        let duplicates = 0;
        let late = 0;
        for (const [c, rows] of arrivals.entries()) {
          const expected = model(rows);
          duplicates += expected.duplicates;
          late += expected.late;
          const got = new Map<string, Rollup>();
          for (const o of out.filter((o) => o.key.startsWith(`${c}:`))) {
            const k = `${o.key}|${o.start}`;
            assert.ok(!got.has(k), `case ${c}: window ${k} emitted twice`);
            got.set(k, o);
          }
          assert.deepEqual(got, expected.outer, `case ${c}`);
        }
        assert.ok(
          duplicates > 0 && late > 0,
          `the generated streams have replays (${duplicates}) and late rows (${late})`,
        );
        const total = (f: (s: StreamingQueryProgress['stateOperators']) => number) =>
          progress.reduce((n, p) => n + f(p.stateOperators), 0);
        assert.equal(
          total((s) => s[0]?.customMetrics.numDroppedDuplicateRows ?? 0),
          duplicates,
          'the deduplication dropped the replays',
        );
        assert.deepEqual(
          [0, 1, 2].map((i) => total((s) => s[i]?.numRowsDroppedByWatermark ?? 0)),
          [0, late, 0],
          'rows dropped by the watermark per operator',
        );
        // Open at the end: the last row's 5-s window, nothing downstream.
        assert.deepEqual(
          progress
            .at(-1)!
            .stateOperators.slice(1)
            .map((s) => s.numRowsTotal),
          [1, 0],
        );
      } finally {
        await q.stop();
      }
    });
  }
});
