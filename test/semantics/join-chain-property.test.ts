import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type StreamingQuery, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Side } from '../fixtures/jobs/join-chains.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/join-chains.js', import.meta.url);
const DELAY = 2000;
const LOWER = -1000;
const UPPER = 3000;
const WINDOW = 1000;
/** Each generated case lives in its own stretch of time, far after the previous one. */
const CASE_SPAN = 1e9;

/** A window of the chain's output: per id and 1-s window of the left time. */
interface Counted {
  id: string;
  start: number;
  n: number;
  matched: number;
}

/** Rows of both sides whose event times wander forward with random lateness. */
const caseArb = fc.array(
  fc.record({
    left: fc.boolean(),
    key: fc.constantFrom('a', 'b'),
    /** On a 500 ms grid, so that rows often sit exactly on the range's and the watermark's bounds. */
    step: fc.integer({ min: -14, max: 8 }).map((s) => s * 500),
    /** Wait for everything added so far to be processed after this row (watermarks propagate). */
    pause: fc.boolean(),
    /** After the pause, stop the query and start it again from its checkpoint. */
    restart: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  }),
  { minLength: 1, maxLength: 40 },
);

/** What the chain must give, computed as a batch engine would: the join, then the windows. */
function model(left: Side[], right: Side[]): Map<string, Counted> {
  const windows = new Map<string, Counted>();
  const count = (l: Side, matched: boolean) => {
    const start = Math.floor(l.t / WINDOW) * WINDOW;
    const k = `${l.id}|${start}`;
    const w = windows.get(k) ?? { id: l.id, start, n: 0, matched: 0 };
    w.n++;
    if (matched) w.matched++;
    windows.set(k, w);
  };
  for (const l of left) {
    const partners = right.filter((r) => r.id === l.id && r.t >= l.t + LOWER && r.t <= l.t + UPPER);
    for (const _ of partners) count(l, true);
    if (partners.length === 0) count(l, false); // the left outer row
  }
  return windows;
}

describe('a stream–stream join, then a window aggregation, property-based, with restarts', () => {
  const tempDir = tempDirs('millrace-join-chain-property');
  const modes = [
    { trigger: 'microBatch', seed: 20261204 },
    { trigger: 'realTime', seed: 20261205 },
  ];
  for (const mode of modes) {
    it(`counts every joined and outer row once, none late after the join, across restarts (${mode.trigger})`, async () => {
      const cases = fc.sample(caseArb, { numRuns: 20, seed: mode.seed });
      const checkpointLocation = tempDir();
      const progress: StreamingQueryProgress[] = [];
      const out: Counted[] = [];
      const late = new Set<string>();
      const start = async () => {
        const q = await startQuery(job, {
          clock: 'manual',
          checkpointLocation,
          params: { case: 'property', trigger: mode.trigger },
        });
        q.on('progress', (p: StreamingQueryProgress) => progress.push(p));
        return q;
      };
      /** Takes what the run produced: real-time progress comes with the clock. */
      const collect = async (q: StreamingQuery) => {
        if (mode.trigger === 'realTime') {
          const next = once(q, 'progress');
          q.clock.advance(1000);
          await next;
        }
        out.push(...q.sink<Counted>('out').rows());
        for (const l of q.lateRows()) late.add(JSON.stringify(l.row));
      };
      let q = await start();
      let restarts = 0;
      try {
        let n = 0;
        const all = cases.map((steps, c) => {
          let t = (c + 1) * CASE_SPAN;
          return steps.map(({ left, key, step }) => {
            t = Math.max((c + 1) * CASE_SPAN, t + step);
            return { left, row: { id: `${c}:${key}`, t, note: `n${n++}` } as Side };
          });
        });
        for (const [c, rows] of all.entries()) {
          for (const [i, { left, row }] of rows.entries()) {
            q.source<Side>(left ? 'left' : 'right').addData([row]);
            const step = cases[c]![i]!;
            if (!step.pause) continue;
            await q.processAllAvailable();
            if (!step.restart) continue;
            await collect(q);
            await q.stop();
            q = await start();
            restarts++;
          }
        }
        // Rows far ahead on both sides move the watermark past every case's windows.
        const end = (cases.length + 2) * CASE_SPAN;
        q.source<Side>('left').addData([{ id: 'end', t: end, note: 'end' }]);
        q.source<Side>('right').addData([{ id: 'end', t: end, note: 'end' }]);
        await q.processAllAvailable();
        await collect(q);
        assert.ok(restarts >= 2, `the query restarted in the middle (${restarts} times)`);

        let lateCount = 0;
        for (const [c, rows] of all.entries()) {
          // A late row was late by the rows of its side that came before it.
          const maxBefore = { left: Number.NEGATIVE_INFINITY, right: Number.NEGATIVE_INFINITY };
          const kept: { left: Side[]; right: Side[] } = { left: [], right: [] };
          for (const { left, row } of rows) {
            const side = left ? 'left' : 'right';
            const seen = left
              ? { id: row.id, lt: row.t, ln: row.note }
              : { id: row.id, rt: row.t, rn: row.note };
            if (late.has(JSON.stringify(seen))) {
              lateCount++;
              assert.ok(row.t <= maxBefore[side] - DELAY, `case ${c}: ${JSON.stringify(row)} was not late`);
            } else kept[side].push(row);
            maxBefore[side] = Math.max(maxBefore[side], row.t);
          }
          const got = new Map<string, Counted>();
          for (const o of out.filter((o) => o.id.startsWith(`${c}:`))) {
            const k = `${o.id}|${o.start}`;
            assert.ok(!got.has(k), `case ${c}: window ${k} emitted twice`);
            got.set(k, o);
          }
          assert.deepEqual(got, model(kept.left, kept.right), `case ${c}`);
        }
        assert.ok(lateCount > 0, 'the generated streams have late rows');
        assert.equal(late.size, lateCount, 'every late row is one the test sent');
        const dropped = (i: number) =>
          progress.reduce((sum, p) => sum + (p.stateOperators[i]?.numRowsDroppedByWatermark ?? 0), 0);
        assert.deepEqual(
          [dropped(0), dropped(1)],
          [lateCount, 0],
          'the join drops the late rows; nothing the join emits is late for the aggregation',
        );
      } finally {
        await q.stop();
      }
    });
  }
});
