import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Event, Out } from '../fixtures/jobs/stateful-processors.js';

const job = new URL('../fixtures/jobs/stateful-processors.js', import.meta.url);
const ev = (user: string, ts = 0, n?: number): Event => ({ user, ts, ...(n === undefined ? {} : { n }) });
type Row = Extract<Out, { kind: 'row' }>;
type Timer = Extract<Out, { kind: 'timer' }>;
type Seen = Extract<Out, { kind: 'seen' }>;

describe('transformWithState', () => {
  it('calls handleInputRows once per row in real-time mode', async () => {
    const q = await startQuery(job, { params: { case: 'counter' } });
    try {
      q.source<Event>('events').addData([ev('ann'), ev('bob'), ev('ann'), ev('ann')]);
      await q.processAllAvailable();
      const rows = q.sink<Row>('out').rows();
      assert.deepEqual(
        rows.map((r) => [r.user, r.count, r.rowsInCall]),
        [
          ['ann', 1, 1],
          ['bob', 1, 1],
          ['ann', 2, 1],
          ['ann', 3, 1],
        ],
      );
    } finally {
      await q.stop();
    }
  });

  it('calls handleInputRows once per key per batch, with all its rows, in micro-batch mode', async () => {
    const q = await startQuery(job, { params: { case: 'counter', trigger: 'microBatch' } });
    try {
      q.source<Event>('events').addData([ev('ann'), ev('bob'), ev('ann'), ev('ann')]);
      await q.processAllAvailable();
      q.source<Event>('events').addData([ev('bob'), ev('bob')]);
      await q.processAllAvailable();
      const epochs = q.sink<Row>('out').epochs();
      assert.deepEqual(
        epochs.map((e) => e.rows.map((r) => [r.user, r.count, r.rowsInCall])),
        [
          [
            ['ann', 3, 3],
            ['bob', 1, 1],
          ],
          [['bob', 3, 2]],
        ],
      );
    } finally {
      await q.stop();
    }
  });

  it('dead-letters a row whose handler leaves state that cannot be kept, and keeps the state from before it', async () => {
    const q = await startQuery(job, { params: { case: 'keeper', onBadRecord: 'deadLetter' } });
    try {
      q.source<Event>('events').addData([ev('ann', 0, 1), ev('ann', 0, 13), ev('ann', 0, 2)]);
      await q.processAllAvailable();
      assert.deepEqual(
        q
          .sink<Seen>('out')
          .rows()
          .map((r) => r.last),
        [null, 1],
        'the row with 13 emits nothing, and the next row sees the value from before it',
      );
      const [letter, ...more] = q.deadLetters();
      assert.ok(letter);
      assert.equal(more.length, 0);
      assert.deepEqual(letter.row, ev('ann', 0, 13));
      assert.equal((letter.error as { code?: string }).code, 'STATE_NOT_ENCODABLE');
      assert.match(letter.error.message, /state of key "ann" cannot be kept/);
    } finally {
      await q.stop();
    }
  });

  it('hands each task the keys of the initial state it owns, on the first run', async () => {
    const q = await startQuery(job, { params: { case: 'counter', initial: 1, partitions: 2 } });
    try {
      q.source<Event>('events').addData([ev('ann'), ev('bob'), ev('cy')]);
      await q.processAllAvailable();
      const counts = Object.fromEntries(
        q
          .sink<Row>('out')
          .rows()
          .map((r) => [r.user, r.count]),
      );
      assert.deepEqual(counts, { ann: 101, bob: 201, cy: 1 });
    } finally {
      await q.stop();
    }
  });

  it('expires value, list and map state after their TTL, reset on every write (manual clock)', async () => {
    const q = await startQuery(job, { params: { case: 'remember' }, clock: 'manual' });
    try {
      const src = q.source<Event>('events');
      src.addData([ev('ann', 0, 1)]);
      await q.processAllAvailable();
      q.clock.advance(6_000);
      src.addData([ev('ann', 0, 2)]);
      await q.processAllAvailable();
      q.clock.advance(6_000); // 12 s: the first write expired (10 s), the second has 4 s left
      src.addData([ev('ann', 0, 3)]);
      await q.processAllAvailable();
      q.clock.advance(10_000); // 22 s: everything written up to 12 s expired
      src.addData([ev('ann', 0, 4)]);
      await q.processAllAvailable();
      const seen = q.sink<Seen>('out').rows();
      assert.deepEqual(
        seen.map((s) => [s.last, s.history, s.tags]),
        [
          [null, [], []],
          [1, [1], ['t1']],
          [2, [2], ['t2']],
          [null, [], []],
        ],
      );
      const progress = once(q, 'progress');
      q.clock.advance(1_000);
      const [p] = (await progress) as [StreamingQueryProgress];
      const [state] = p.stateOperators;
      assert.equal(state!.numRowsTotal, 3, 'only the last write of each state variable is held');
    } finally {
      await q.stop();
    }
  });
});

describe('transformWithState timers', () => {
  it('fires a due processing-time timer when the next row arrives, before that row (on arrival)', async () => {
    const q = await startQuery(job, { params: { case: 'inactivity' }, clock: 'manual' });
    try {
      const src = q.source<Event>('events');
      const t0 = q.clock.now();
      src.addData([ev('ann')]); // arms a timer at t0 + 10 s
      await q.processAllAvailable();
      q.clock.advance(15_000); // due, but no row: nothing fires on arrival
      await q.processAllAvailable();
      assert.deepEqual(
        q
          .sink<Out>('out')
          .rows()
          .map((r) => r.kind),
        ['row'],
      );
      q.clock.advance(5_000);
      src.addData([ev('bob')]); // t0 + 20 s: ann's timer fires first
      await q.processAllAvailable();
      const out = q.sink<Out>('out').rows();
      assert.deepEqual(
        out.map((r) => `${r.kind}:${r.user}`),
        ['row:ann', 'timer:ann', 'row:bob'],
      );
      const timer = out[1] as Timer;
      assert.equal(timer.expiry, t0 + 10_000);
      assert.equal(timer.firedAt, t0 + 20_000, 'fired when the row arrived, 10 s after it was due');
    } finally {
      await q.stop();
    }
  });

  it('fires due timers from an idle tick with timerFiring wallClock', async () => {
    const q = await startQuery(job, {
      params: { case: 'inactivity', timerFiring: 'wallClock' },
      clock: 'manual',
    });
    try {
      const t0 = q.clock.now();
      q.source<Event>('events').addData([ev('ann')]);
      await q.processAllAvailable();
      q.clock.advance(9_999);
      await q.processAllAvailable();
      assert.equal(q.sink<Out>('out').rows().length, 1, 'not due yet');
      q.clock.advance(1); // no row: the task's idle tick fires the timer
      await q.processAllAvailable();
      const timer = q.sink<Out>('out').rows()[1] as Timer;
      assert.deepEqual([timer.kind, timer.user, timer.firedAt], ['timer', 'ann', t0 + 10_000]);
    } finally {
      await q.stop();
    }
  });

  it('fires every due timer when the query stops', async () => {
    const q = await startQuery(job, { params: { case: 'inactivity' }, clock: 'manual' });
    const sink = q.sink<Out>('out');
    try {
      q.source<Event>('events').addData([ev('ann'), ev('bob')]);
      await q.processAllAvailable();
      q.clock.advance(10_000);
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    assert.deepEqual(
      sink.rows().map((r) => `${r.kind}:${r.user}`),
      ['row:ann', 'row:bob', 'timer:ann', 'timer:bob'],
    );
  });

  it('runs a processor that defines only handleInputRows, on the defaults for init, handleExpiredTimer and close', async () => {
    const q = await startQuery(job, { params: { case: 'reminder' }, clock: 'manual' });
    const sink = q.sink<Row>('out');
    const t0 = q.clock.now();
    try {
      q.source<Event>('events').addData([ev('ann'), ev('bob')]); // each arms a timer at t0 + 1 s
      await q.processAllAvailable();
      q.clock.advance(2_000);
      q.source<Event>('events').addData([ev('ann')]); // the due timers fire first, and emit nothing
      await q.processAllAvailable();
      q.clock.advance(2_000);
    } finally {
      await q.stop(); // the timer armed at t0 + 2 s fires, then the processor closes
    }
    await q.awaitTermination();
    assert.deepEqual(
      sink.rows().map((r) => [r.user, r.at - t0]),
      [
        ['ann', 0],
        ['bob', 0],
        ['ann', 2_000],
      ],
    );
  });

  it('fires processing-time timers after the rows of a batch, or in a batch without data (micro-batch)', async () => {
    const q = await startQuery(job, {
      params: { case: 'inactivity', trigger: 'microBatch' },
      clock: 'manual',
    });
    try {
      const src = q.source<Event>('events');
      src.addData([ev('ann')]);
      await q.processAllAvailable();
      q.clock.advance(10_000);
      src.addData([ev('bob')]);
      await q.processAllAvailable();
      q.clock.advance(9_999);
      await q.processAllAvailable();
      q.clock.advance(1); // bob's timer is due: a batch without data runs for it
      await q.processAllAvailable();
      assert.deepEqual(
        q
          .sink<Out>('out')
          .epochs()
          .map((e) => e.rows.map((r) => `${r.kind}:${r.user}`)),
        [['row:ann'], ['row:bob', 'timer:ann'], ['timer:bob']],
      );
    } finally {
      await q.stop();
    }
  });

  for (const trigger of ['realTime', 'microBatch']) {
    it(`fires event-time timers as the watermark passes them and drops late rows (${trigger})`, async () => {
      const q = await startQuery(job, { params: { case: 'eventTime', trigger } });
      try {
        const src = q.source<Event>('events');
        src.addData([ev('ann', 10_000)]); // timer at 15 s; watermark 8 s
        await q.processAllAvailable();
        src.addData([ev('bob', 16_000)]); // watermark 14 s: not yet
        await q.processAllAvailable();
        src.addData([ev('cy', 17_500)]); // watermark 15.5 s: ann's timer fires
        await q.processAllAvailable();
        src.addData([ev('ann', 12_000)]); // at or below the watermark: late
        await q.processAllAvailable();
        const out = q.sink<Out>('out').rows();
        const timers = out.filter((r): r is Timer => r.kind === 'timer');
        assert.deepEqual(
          timers.map((t) => [t.user, t.expiry, t.watermark]),
          [['ann', 15_000, 15_500]],
        );
        assert.equal(out.filter((r) => r.kind === 'row').length, 3);
        assert.deepEqual(
          q.lateRows().map((l) => (l.row as Event).ts),
          [12_000],
        );
      } finally {
        await q.stop();
      }
    });
  }
});
