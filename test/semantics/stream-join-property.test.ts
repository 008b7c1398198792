import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type JoinType, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Click, Impression } from '../fixtures/jobs/joins.js';

const job = new URL('../fixtures/jobs/joins.js', import.meta.url);
const DELAY = 2000;
const LOWER = -1000;
const UPPER = 3000;
/** Each generated case lives in its own stretch of time, far after the previous one. */
const CASE_SPAN = 1e9;

type Row = Impression | Click;
const isLeft = (r: Row): r is Impression => 'lt' in r;

/** Rows of both sides whose event times wander forward with random lateness. */
const caseArb = fc.array(
  fc.record({
    left: fc.boolean(),
    key: fc.constantFrom('a', 'b'),
    /** On a 500 ms grid, so that rows often sit exactly on the range's and the watermark's bounds. */
    step: fc.integer({ min: -14, max: 8 }).map((s) => s * 500),
    /** Wait for everything added so far to be processed after this row (watermarks propagate). */
    pause: fc.boolean(),
  }),
  { minLength: 1, maxLength: 40 },
);

/** What a batch engine computes over the same rows: every matching pair, and unmatched outer rows. */
function batchJoin(left: Impression[], right: Click[], type: JoinType): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const matchedRight = new Set<Click>();
  for (const l of left) {
    let matched = false;
    for (const r of right) {
      if (r.k !== l.k || r.rt < l.lt + LOWER || r.rt > l.lt + UPPER) continue;
      out.push({ ...l, ...r });
      matched = true;
      matchedRight.add(r);
    }
    if (!matched && type === 'leftOuter') out.push({ ...l });
  }
  if (type === 'rightOuter') for (const r of right) if (!matchedRight.has(r)) out.push({ ...r });
  return out;
}

const canonical = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

async function check(type: JoinType, trigger: string, seed: number): Promise<void> {
  const cases = fc.sample(caseArb, { numRuns: 12, seed });
  const q = await startQuery(job, { clock: 'manual', params: { type, trigger, delay: DELAY } });
  try {
    let n = 0;
    const all: Row[][] = cases.map((steps, c) => {
      let t = (c + 1) * CASE_SPAN;
      return steps.map(({ left, key, step }): Row => {
        t = Math.max((c + 1) * CASE_SPAN, t + step);
        const k = `${c}:${key}`;
        return left ? { k, lt: t, lv: n++ } : { k, rt: t, rv: n++ };
      });
    });
    for (const [c, rows] of all.entries()) {
      for (const [i, row] of rows.entries()) {
        if (isLeft(row)) q.source<Impression>('impressions').addData([row]);
        else q.source<Click>('clicks').addData([row]);
        if (cases[c]![i]!.pause) await q.processAllAvailable();
      }
    }
    // Rows far ahead on both sides move the watermark past every case: every outer row is due.
    const end = (cases.length + 2) * CASE_SPAN;
    q.source<Impression>('impressions').addData([{ k: 'end', lt: end, lv: -1 }]);
    q.source<Click>('clicks').addData([{ k: 'end', rt: end, rv: -1 }]);
    await q.processAllAvailable();

    const late = new Set(q.lateRows().map((l) => JSON.stringify(l.row)));
    const out = q.sink<Record<string, unknown>>('out').rows();
    let lateCount = 0;
    for (const [c, rows] of all.entries()) {
      // A late row was late by the rows of its side that came before it.
      const maxBefore = { left: Number.NEGATIVE_INFINITY, right: Number.NEGATIVE_INFINITY };
      for (const r of rows) {
        const side = isLeft(r) ? 'left' : 'right';
        const t = isLeft(r) ? r.lt : r.rt;
        if (late.has(JSON.stringify(r))) {
          lateCount++;
          assert.ok(t <= maxBefore[side] - DELAY, `case ${c}: ${JSON.stringify(r)} was not late`);
        }
        maxBefore[side] = Math.max(maxBefore[side], t);
      }
      const kept = rows.filter((r) => !late.has(JSON.stringify(r)));
      const expected = batchJoin(kept.filter(isLeft), kept.filter((r) => !isLeft(r)) as Click[], type);
      const got = out.filter((o) => String(o.k).startsWith(`${c}:`));
      assert.deepEqual(canonical(got), canonical(expected), `case ${c} (${type}, ${trigger})`);
    }
    assert.ok(lateCount > 0, 'the generated streams have late rows');
    assert.deepEqual(
      canonical(out.filter((o) => o.k === 'end')),
      canonical([{ k: 'end', lt: end, lv: -1, rt: end, rv: -1 }]),
    );

    if (trigger === 'realTime') {
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      // Only the two last rows can still match: every other row was evicted.
      assert.equal(p.stateOperators[0]?.numRowsTotal, 2);
      assert.equal(p.stateOperators[0]?.numRowsDroppedByWatermark, lateCount);
    }
  } finally {
    await q.stop();
  }
}

describe('stream–stream join, property-based', () => {
  const types: JoinType[] = ['inner', 'leftOuter', 'rightOuter'];
  for (const [i, type] of types.entries()) {
    for (const trigger of ['realTime', 'microBatch']) {
      it(`emits exactly the batch join of the rows that were not late: ${type}, ${trigger}`, async () => {
        await check(type, trigger, 20261130 + i);
      });
    }
  }
});
