import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { MillraceError, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Line } from '../fixtures/jobs/sessions.js';

const job = new URL('../fixtures/jobs/sessions.js', import.meta.url);

interface Session {
  sessionId: string;
  window: { start: number; end: number };
  numEvents: number;
}

/** (word, start s, end s, events), sorted, for comparing without caring about emit order. */
const flat = (rows: Session[]) =>
  rows
    .map((r) => [r.sessionId, r.window.start / 1000, r.window.end / 1000, r.numEvents] as const)
    .sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1));

describe('session windows', () => {
  it('merge sessions a row bridges, drop late rows, and emit each session once its end passes the watermark', async () => {
    const q = await startQuery(job, { params: { mode: 'append' }, clock: 'manual' });
    try {
      const add = async (sentence: string, t: number) => {
        q.source<Line>('lines').addData([{ sentence, t }]);
        await q.processAllAvailable();
      };
      await add('hello world spark streaming', 40);
      await add('world hello structured streaming', 41);
      await add('spark streaming', 25); // new sessions before the earlier ones
      await add('spark streaming', 0); // behind the 11 s watermark: late
      await add('spark streaming', 30); // bridges [25,35) and [40,50): one session
      await add('hello apache spark', 60);
      assert.deepEqual(q.sink<Session>('sessions').rows(), [], 'no session has closed yet');
      await add('structured streaming', 90); // the watermark moves to 60
      assert.deepEqual(flat(q.sink<Session>('sessions').rows()), [
        ['hello', 40, 51, 2],
        ['spark', 25, 50, 3],
        ['streaming', 25, 51, 4],
        ['structured', 41, 51, 1],
        ['world', 40, 51, 2],
      ]);
      const progress = once(q, 'progress');
      await add('flush', 1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.equal(p.stateOperators[0]?.operatorName, 'sessionWindowStateStoreSave');
      assert.deepEqual(
        q.recentProgress.reduce((n, x) => n + (x.stateOperators[0]?.numRowsDroppedByWatermark ?? 0), 0),
        2,
        'the two words of the late line were dropped',
      );
    } finally {
      await q.stop();
    }
  });

  it('keep sessions further apart than the gap separate, and merge them in complete mode too', async () => {
    const q = await startQuery(job, { params: { mode: 'complete' }, clock: 'manual' });
    try {
      q.source<Line>('lines').addData([
        { sentence: 'a', t: 0 },
        { sentence: 'a', t: 5 },
        { sentence: 'a', t: 30 },
      ]);
      await q.processAllAvailable();
      assert.deepEqual(flat(q.sink<Session>('sessions').rows()), [
        ['a', 0, 15, 2],
        ['a', 30, 40, 1],
      ]);
      q.source<Line>('lines').addData([{ sentence: 'a', t: 20 }]); // [20,30) touches [30,40) and [0,15)? no: 15 < 20
      await q.processAllAvailable();
      assert.deepEqual(flat(q.sink<Session>('sessions').rows()), [
        ['a', 0, 15, 2],
        ['a', 20, 40, 2],
      ]);
    } finally {
      await q.stop();
    }
  });

  it('emit in real-time append mode as soon as the watermark passes a session end', async () => {
    const q = await startQuery(job, { params: { mode: 'append', trigger: 'realTime' } });
    try {
      q.source<Line>('lines').addData([
        { sentence: 'x y', t: 10 },
        { sentence: 'x', t: 15 },
      ]);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('sessions').rows(), []);
      q.source<Line>('lines').addData([{ sentence: 'z', t: 56 }]); // watermark 26: x [10,25) and y [10,20) close
      await q.processAllAvailable();
      assert.deepEqual(flat(q.sink<Session>('sessions').rows()), [
        ['x', 10, 25, 2],
        ['y', 10, 20, 1],
      ]);
    } finally {
      await q.stop();
    }
  });

  it('refuse update mode at plan time', async () => {
    await assert.rejects(startQuery(job, { params: { mode: 'update' } }), (e: unknown) => {
      assert.ok(e instanceof MillraceError);
      assert.equal(e.code, 'OUTPUT_MODE_NOT_SUPPORTED');
      assert.match(e.message, /session changes its range/);
      return true;
    });
  });
});
