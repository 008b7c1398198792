import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { MillraceError, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Side } from '../fixtures/jobs/join-chains.js';

const job = new URL('../fixtures/jobs/join-chains.js', import.meta.url);
const at = (iso: string) => Date.parse(`${iso}Z`);
const s = (n: number) => n * 1000;

/** One step: rows added to both sides at once, what the sink got, and each operator's counts. */
interface Step {
  left: Side[];
  right: Side[];
  /** Rows of the third stream (the `join-join` case). */
  extra?: Side[];
  out: unknown[];
  /** numRowsTotal per stateful operator, the join first. */
  state: number[];
  dropped: number[];
}

async function check(name: string, trigger: string, steps: Step[]) {
  const q = await startQuery(job, { params: { case: name, trigger }, clock: 'manual' });
  const all: StreamingQueryProgress[] = [];
  q.on('progress', (p: StreamingQueryProgress) => all.push(p));
  try {
    const expected: unknown[] = [];
    const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();
    for (const [i, step] of steps.entries()) {
      const from = all.length;
      // Both sides in one synchronous run: one micro-batch, like Spark's MultiAddData.
      q.source<Side>('left').addData(step.left);
      q.source<Side>('right').addData(step.right);
      if (step.extra !== undefined) q.source<Side>('extra').addData(step.extra);
      await q.processAllAvailable();
      expected.push(...step.out);
      assert.deepEqual(sorted(q.sink('out').rows()), sorted(expected), `step ${i + 1}: output`);
      if (trigger !== 'microBatch') {
        const next = once(q, 'progress');
        q.clock.advance(1000);
        await next;
      }
      const mine = all.slice(from);
      const state = mine.at(-1)!.stateOperators.map((o) => o.numRowsTotal);
      const dropped = state.map((_, o) =>
        mine.reduce((n, p) => n + (p.stateOperators[o]?.numRowsDroppedByWatermark ?? 0), 0),
      );
      assert.deepEqual(state, step.state, `step ${i + 1}: state rows per operator`);
      assert.deepEqual(dropped, step.dropped, `step ${i + 1}: rows dropped by the watermark per operator`);
    }
  } finally {
    await q.stop();
  }
}

const side = (id: string, t: number, note: string): Side => ({ id, t, note });

/** The join cases of Spark's MultiStatefulOperatorsSuite, with its answers, and one of the join's output watermark. */
const cases: [string, string, Step[]][] = [
  [
    'outer-window',
    "a time-interval left outer join, then a window aggregation by the join's output watermark, gives Spark's answers",
    [
      {
        left: [
          side('abc', at('2020-01-01T00:00:00'), 'has no join partner'),
          side('abc', at('2020-01-02T00:00:00'), 'joined with A'),
          side('abc', at('2020-01-02T01:00:00'), 'joined with B'),
        ],
        right: [
          side('abc', at('2020-01-02T00:00:10'), 'A'),
          side('abc', at('2020-01-02T00:59:59'), 'B'),
          side('abc', at('2020-01-02T02:00:00'), 'C'),
        ],
        // The watermark reaches 00:58:00 (the left side's, 2 minutes behind 01:00); the join's
        // output watermark is 40 s behind, 00:57:20: it emits the unmatched row, and the windows
        // that end by then close.
        out: [
          { start: '2020-01-01T00:00:00.000Z', end: '2020-01-01T00:00:30.000Z', n: 1 },
          { start: '2020-01-02T00:00:00.000Z', end: '2020-01-02T00:00:30.000Z', n: 1 },
        ],
        state: [3, 1],
        dropped: [0, 0],
      },
      {
        left: [side('abc', at('2020-01-05T00:00:00'), 'joined with D')],
        right: [side('abc', at('2020-01-05T00:00:10'), 'D')],
        // The watermark reaches 2020-01-04 23:56:10 (the right side's); the aggregation's,
        // 23:55:30, closes the window of 01:00.
        out: [{ start: '2020-01-02T01:00:00.000Z', end: '2020-01-02T01:00:30.000Z', n: 1 }],
        state: [2, 1],
        dropped: [0, 0],
      },
    ],
  ],
  [
    'equal-time-window',
    "an inner join on equal event times, then a window aggregation, gives Spark's answers",
    [
      {
        left: [1, 2, 3, 4].map((n) => side('k', s(n), `l${n}`)),
        right: [1, 2, 3, 4].map((n) => side('k', s(n), `r${n}`)),
        out: [],
        state: [0, 1],
        dropped: [0, 0],
      },
      {
        left: [side('k', s(5), 'l5')],
        right: [side('k', s(5), 'r5')],
        out: [{ start: 0, n: 4 }],
        state: [0, 1],
        dropped: [0, 0],
      },
    ],
  ],
  [
    'join-dedup',
    'an inner join, then deduplication by the left time, forgets keys by the join output watermark',
    [
      {
        // l1 matches r1 and r2 (within 2 s): one row after deduplication; l4 matches nothing yet.
        left: [side('k', s(1), 'l1'), side('k', s(4), 'l4')],
        right: [side('k', s(1), 'r1'), side('k', s(2), 'r2')],
        out: [{ lt: 1, ln: 'l1' }],
        // The watermark is 2 s; the join's output watermark 0 s: l4 and r2 stay buffered, and the
        // deduplication keeps l1's key until its watermark passes 1 s.
        state: [2, 1],
        dropped: [0, 0],
      },
      {
        // r5 matches l4; the watermark moves to 5 s, 3 s at the deduplication: l1's key goes.
        left: [side('k', s(5), 'l5')],
        right: [side('k', s(5), 'r5')],
        out: [
          { lt: 4, ln: 'l4' },
          { lt: 5, ln: 'l5' },
        ],
        state: [2, 2],
        dropped: [0, 0],
      },
    ],
  ],
  [
    'dedup-join',
    'deduplication, then a join, sees a replayed row once',
    [
      {
        // x@1 comes twice: one reaches the join. Both rows match R3; the watermark reaches 2 s,
        // which forgets the deduplication's keys (1 s and 2 s) and none of the join's rows.
        left: [side('a', s(1), 'x'), side('a', s(1), 'x'), side('a', s(2), 'y')],
        right: [side('a', s(3), 'R3')],
        out: [
          { lt: 1, ln: 'x', rt: 3 },
          { lt: 2, ln: 'y', rt: 3 },
        ],
        state: [0, 3],
        dropped: [0, 0],
      },
      // x@1 again, now behind the watermark: late at the deduplication.
      { left: [side('a', s(1), 'x')], right: [], out: [], state: [0, 3], dropped: [1, 0] },
    ],
  ],
  [
    'join-join',
    'a join, then a join of its output with a third stream, keeps time by the one before',
    [
      {
        // The watermark reaches 6 s (the right side's); the second join keeps time by 4 s.
        left: [side('a', s(5), 'a5'), side('b', s(9), 'b9')],
        right: [side('c', s(6), 'c6')],
        extra: [side('a', s(5), 'x5'), side('c', s(9), 'x9')],
        out: [],
        state: [2, 2],
        dropped: [0, 0],
      },
      {
        // a@7 joins a@5: the joined row's left time, 5 s, is behind the watermark (6 s, then 7 s)
        // but not the second join's (4 s when it arrives): it meets x5.
        left: [],
        right: [side('a', s(7), 'a7')],
        out: [{ id: 'a', lt: 5, rt: 7, xt: 5 }],
        state: [1, 3],
        dropped: [0, 0],
      },
    ],
  ],
  [
    'property',
    "a left outer join's unmatched row counts in a window the watermark in force has passed",
    [
      {
        // r in [l − 1 s, l + 3 s], watermarks 2 s behind: the watermark reaches 10 s; the left row
        // of 8 s can still match a right row up to 11 s, so it stays.
        left: [side('a', s(8), 'a8'), side('b', s(12), 'b12')],
        right: [side('b', s(12), 'B12')],
        out: [],
        state: [3, 1],
        dropped: [0, 0],
      },
      {
        // The watermark reaches 12 s: the row of 8 s goes out alone. Its window [8 s, 9 s) ended
        // before 12 s, but the aggregation keeps time by the join's output watermark, 3 s behind
        // (9 s): the row counts, and the window closes.
        left: [side('b', s(14), 'b14')],
        right: [side('b', s(14), 'B14')],
        out: [{ id: 'a', start: s(8), n: 1, matched: 0 }],
        state: [4, 2],
        dropped: [0, 0],
      },
    ],
  ],
];

for (const trigger of ['microBatch', 'realTime']) {
  describe(`stream–stream joins chained, ${trigger === 'microBatch' ? 'micro-batch' : 'real-time'} mode`, () => {
    for (const [name, title, steps] of cases) it(title, () => check(name, trigger, steps));
  });
}

describe('stream–stream joins chained in the wrong output mode', () => {
  it('refuses update mode for a join followed by an aggregation, naming the join', async () => {
    await assert.rejects(
      startQuery(job, { params: { case: 'equal-time-window', mode: 'update' } }),
      (e: unknown) => {
        assert.ok(e instanceof MillraceError);
        assert.equal(e.code, 'OUTPUT_MODE_NOT_SUPPORTED');
        assert.match(e.message, /'update' is not supported for streamJoin#\d+: .*append mode only/);
        return true;
      },
    );
  });
});
