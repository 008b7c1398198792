import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import {
  MillraceError,
  type StreamingQuery,
  type StreamingQueryProgress,
  startQuery,
} from '../../src/index.js';
import { testStream } from '../../src/testing/index.js';
import { type Tick, tick } from '../fixtures/jobs/chains.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/chains.js', import.meta.url);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => tick(from + i));

/** One step of a case: rows added, then what the sink got, and each stateful operator's counts. */
interface Step {
  add: Tick[];
  out: unknown[];
  /** numRowsTotal per stateful operator, in plan order (the one nearest the source first). */
  state: number[];
  /** numRowsDroppedByWatermark per operator for the step's rows (input rows, not Spark's partial aggregates). */
  dropped: number[];
}

/** The step's progress: the last batch's (micro-batch), or one the clock makes (real-time). */
async function progressOf(
  q: StreamingQuery,
  all: StreamingQueryProgress[],
  from: number,
  microBatch: boolean,
) {
  if (!microBatch) {
    const next = once(q, 'progress');
    q.clock.advance(1000);
    await next;
  }
  const step = all.slice(from);
  const byOperator = (p: StreamingQueryProgress) => p.stateOperators;
  const state = byOperator(step.at(-1)!).map((s) => s.numRowsTotal);
  const dropped = state.map((_, i) =>
    step.reduce((n, p) => n + (byOperator(p)[i]?.numRowsDroppedByWatermark ?? 0), 0),
  );
  return { state, dropped };
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
      q.source<Tick>('in').addData(step.add);
      await q.processAllAvailable();
      // Like Spark's CheckNewAnswer, in any order (the sink holds every partition's rows).
      expected.push(...step.out);
      assert.deepEqual(sorted(q.sink('out').rows()), sorted(expected), `step ${i + 1}: output`);
      const { state, dropped } = await progressOf(q, all, from, trigger === 'microBatch');
      assert.deepEqual(state, step.state, `step ${i + 1}: state rows per operator`);
      assert.deepEqual(dropped, step.dropped, `step ${i + 1}: rows dropped by the watermark per operator`);
    }
  } finally {
    await q.stop();
  }
}

/** Spark's MultiStatefulOperatorsSuite, case by case, with its answers. */
const cases: [string, string, Step[]][] = [
  [
    'window-window',
    'a window aggregation of a window aggregation, append mode',
    [
      // op1 closes [10,15) 5 and [15,20) 5; op2 sums them into [10,20) and closes it.
      { add: range(10, 21), out: [{ start: 10, count: 2, sum: 10 }], state: [1, 0], dropped: [0, 0] },
      // [10,15) and [15,20) are closed: their 10 rows are late at op1.
      { add: range(10, 29), out: [], state: [1, 1], dropped: [10, 0] },
      { add: range(30, 31), out: [{ start: 20, count: 2, sum: 12 }], state: [1, 0], dropped: [0, 0] },
    ],
  ],
  [
    'agg-agg-agg',
    'three aggregations chained with windowTime, append mode',
    [
      {
        add: range(0, 37),
        out: [{ start: 0, end: 20, count: 2, sum: 20 }],
        state: [1, 1, 1],
        dropped: [0, 0, 0],
      },
      {
        // 30..34 are late for the closed [30,35); 35..37 still count in [35,40).
        add: range(30, 60),
        out: [
          { start: 20, end: 40, count: 2, sum: 23 },
          { start: 40, end: 60, count: 2, sum: 20 },
        ],
        state: [1, 0, 0],
        dropped: [5, 0, 0],
      },
    ],
  ],
  [
    'dedup-window',
    'deduplication, then a window aggregation, append mode',
    [{ add: range(1, 15), out: [{ start: 0, count: 4 }], state: [10, 3], dropped: [0, 0] }],
  ],
  [
    'window-dedup',
    'a window aggregation, then deduplication without an event-time key, append mode',
    [
      {
        add: [tick(1), tick(5), tick(10), tick(15)],
        out: [
          { windowEnd: 5, count: 1 },
          { windowEnd: 10, count: 1 },
          { windowEnd: 15, count: 1 },
        ],
        state: [1, 3],
        dropped: [0, 0],
      },
    ],
  ],
  [
    'window-dedup-by-time',
    'a window aggregation, then deduplication by windowTime: its keys are forgotten',
    [
      {
        add: [tick(1), tick(5), tick(10), tick(15)],
        out: [
          { windowEnd: 5, windowTime: 4999, count: 1 },
          { windowEnd: 10, windowTime: 9999, count: 1 },
          { windowEnd: 15, windowTime: 14999, count: 1 },
        ],
        state: [1, 0],
        dropped: [0, 0],
      },
    ],
  ],
  [
    'by-event-time',
    'an aggregation grouped by the watermarked column itself, append mode',
    [
      { add: [tick(10)], out: [], state: [1], dropped: [0] },
      // The watermark moves to 15 s: the group of 10 s is final.
      { add: [tick(25)], out: [{ eventTime: 10, count: 1 }], state: [1], dropped: [0] },
      { add: [tick(10), tick(14), tick(26)], out: [], state: [2], dropped: [2] },
      {
        add: [tick(40)],
        out: [
          { eventTime: 25, count: 1 },
          { eventTime: 26, count: 1 },
        ],
        state: [1],
        dropped: [0],
      },
    ],
  ],
  [
    'window-processor',
    'a window aggregation, then transformWithState, append mode',
    [
      {
        add: range(0, 10),
        out: [
          { key: 'all', total: 5 },
          { key: 'all', total: 10 },
        ],
        state: [1, 1],
        dropped: [0, 0],
      },
      { add: range(11, 15), out: [{ key: 'all', total: 15 }], state: [1, 1], dropped: [0, 0] },
    ],
  ],
  [
    'processor-count',
    'transformWithState, then an aggregation, update mode',
    [
      { add: [tick(1)], out: [{ key: 'odd', n: 1, last: 1 }], state: [1, 1], dropped: [0, 0] },
      {
        add: [tick(2), tick(3)],
        out: [
          { key: 'even', n: 1, last: 1 },
          { key: 'odd', n: 2, last: 2 },
        ],
        state: [2, 2],
        dropped: [0, 0],
      },
    ],
  ],
  [
    'processor-window',
    'transformWithState with an eventTimeColumn, then a window aggregation, append mode',
    [
      {
        // Rows 0..9 s and the timers of 0 and 5 (at 2 s and 7 s): [0,5) closes at the 9-s watermark.
        add: range(0, 9),
        out: [{ start: 0, n: 6, sum: 9 }],
        state: [0, 1],
        dropped: [0, 0],
      },
      // 3 s is late at the processor; 12 s moves the watermark past [5,10).
      { add: [tick(12), tick(3)], out: [{ start: 5, n: 6, sum: 34 }], state: [0, 1], dropped: [1, 0] },
    ],
  ],
];

for (const trigger of ['microBatch', 'realTime']) {
  describe(`chains of stateful operators, ${trigger === 'microBatch' ? 'micro-batch' : 'real-time'} mode`, () => {
    for (const [name, title, steps] of cases)
      it(`${title} gives Spark's answers`, () => check(name, trigger, steps));
  });
}

describe('chains of stateful operators that cannot run', () => {
  it('refuses an aggregation in update mode before another stateful operator, naming both', async () => {
    await assert.rejects(
      startQuery(job, { params: { case: 'window-window', mode: 'update' } }),
      (e: unknown) => {
        assert.ok(e instanceof MillraceError);
        assert.equal(e.code, 'OUTPUT_MODE_NOT_SUPPORTED');
        assert.match(
          e.message,
          /'update' is not supported for aggregate#\d+: its rows go on to aggregate#\d+.*modes that work here: append/,
        );
        return true;
      },
    );
  });
});

describe('a processor that emits rows behind the watermark', () => {
  for (const trigger of ['microBatch', 'realTime'])
    it(`fails the query with EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED (${trigger})`, async () => {
      const q = await startQuery(job, { params: { case: 'processor-old-rows', trigger }, clock: 'manual' });
      try {
        // Stamped 0, above the watermark that has seen no row yet.
        q.source<Tick>('in').addData([tick(10)]);
        await q.processAllAvailable();
        // Stamped 0 again, now behind the 10-s watermark the processor judged the row by.
        q.source<Tick>('in').addData([tick(11)]);
        // The batch that runs it (micro-batch) fails with the query.
        const processed = q.processAllAvailable().catch(() => {});
        await assert.rejects(q.awaitTermination(), (e: MillraceError) => {
          const code = e.code === 'TASK_FAILED' ? (e.cause as MillraceError).code : e.code;
          assert.equal(code, 'EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED');
          assert.match(
            e.message,
            /eventTimeColumn 'eventTime' \(1970-01-01T00:00:00.000Z\) is not later than the watermark/,
          );
          return true;
        });
        await processed;
      } finally {
        await q.stop().catch(() => {});
      }
    });
});

describe('rows added in one go are one micro-batch', () => {
  const twoPartitions = { case: 'by-event-time', trigger: 'microBatch0', sourcePartitions: 2 };

  it('takes addData calls to two partitions made in one synchronous run into one batch', async () => {
    const q = await startQuery(job, { params: twoPartitions, clock: 'manual' });
    const batches: StreamingQueryProgress[] = [];
    q.on('progress', (p: StreamingQueryProgress) => batches.push(p));
    try {
      q.source<Tick>('in').addData([tick(30)], 0);
      q.source<Tick>('in').addData([tick(12)], 1);
      await q.processAllAvailable();
      const withData = batches.filter((p) => p.numInputRows > 0);
      assert.deepEqual(
        withData.map((p) => [p.batchId, p.numInputRows]),
        [[0, 2]],
      );
    } finally {
      await q.stop();
    }
  });

  it('takes the parts of multiAddData into one batch, and the next step into another', async () => {
    const batches: StreamingQueryProgress[] = [];
    await testStream(job, { params: twoPartitions })
      .assertOnQuery((q) => q.on('progress', (p: StreamingQueryProgress) => batches.push(p)))
      .multiAddData(
        { source: 'in', rows: [tick(30)], partition: 0 },
        { source: 'in', rows: [tick(12)], partition: 1 },
      )
      .addData('in', [tick(60)], 0)
      .checkAnswer('out', [
        { eventTime: 12, count: 1 },
        { eventTime: 30, count: 1 },
      ])
      .run();
    assert.deepEqual(
      batches.filter((p) => p.numInputRows > 0).map((p) => p.numInputRows),
      [2, 1],
    );
  });
});

describe('a chain restarted from its checkpoint', () => {
  const tempDir = tempDirs('millrace-chains');

  it('resumes between the batch that moved the watermark and the batch without data it owes, with Spark’s answer', async () => {
    const checkpointLocation = tempDir();
    const params = { case: 'window-window', trigger: 'microBatch' };
    const first = await startQuery(job, { params, clock: 'manual', checkpointLocation });
    try {
      first.source<Tick>('in').addData(range(10, 21));
      // One tick of the trigger: one batch, the one with the rows; it moves the watermark to 21 s.
      const batch = once(first, 'progress');
      first.clock.advance(3_600_000);
      const [p] = (await batch) as [StreamingQueryProgress];
      assert.equal(p.numInputRows, 12);
      assert.deepEqual(first.sink('out').rows(), []);
    } finally {
      await first.stop();
    }
    const second = await startQuery(job, { params, clock: 'manual', checkpointLocation });
    try {
      await second.processAllAvailable();
      // op2 judges late rows by the watermark the committed batch ran with, not by 21 s: the
      // windows op1 closes now are not late there.
      assert.deepEqual(second.sink('out').rows(), [{ start: 10, count: 2, sum: 10 }]);
      assert.deepEqual(
        second.lastProgress?.stateOperators.map((s) => s.numRowsTotal),
        [1, 0],
      );
    } finally {
      await second.stop();
    }
  });
});

describe('a chain and its checkpoint', () => {
  const tempDir = tempDirs('millrace-chains-evolution');

  it('refuses a restart that adds a stateful operator to the chain, naming the operators', async () => {
    const checkpointLocation = tempDir();
    const q = await startQuery(job, {
      params: { case: 'by-event-time', trigger: 'microBatch' },
      clock: 'manual',
      checkpointLocation,
    });
    try {
      q.source<Tick>('in').addData([tick(1)]);
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    await assert.rejects(
      startQuery(job, {
        params: { case: 'dedup-window', trigger: 'microBatch' },
        clock: 'manual',
        checkpointLocation,
      }),
      (e: unknown) => {
        assert.ok(e instanceof MillraceError);
        assert.equal(e.code, 'CHECKPOINT_INCOMPATIBLE_CHANGE');
        assert.match(
          e.message,
          /number of stateful operators changed from 1 \(aggregate \d+\) to 2 \(dedup \d+, aggregate \d+\)/,
        );
        return true;
      },
    );
  });
});
