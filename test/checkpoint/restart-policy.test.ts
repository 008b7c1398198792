import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  MillraceError,
  type RestartEvent,
  type RestartPolicyInput,
  type StreamingQuery,
  type StreamingQueryProgress,
  startQuery,
} from '../../src/index.js';
import { DEFAULT_QUERY_OPTIONS, resolveQueryOptions } from '../../src/plan/query-options.js';
import { backoffMs, DEFAULT_RESTART_POLICY } from '../../src/plan/restart-policy.js';
import { isRetryable } from '../../src/runtime/driver/restarts.js';
import type { FlakyRow } from '../fixtures/jobs/flaky.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const flaky = new URL('../fixtures/jobs/flaky.js', import.meta.url);
const widen = new URL('../fixtures/jobs/widen.js', import.meta.url);

const tempDir = tempDirs('millrace-restart');

const row = (id: number): FlakyRow => ({ id });
const poison = (id: number): FlakyRow => ({ id, poison: true });
const ids = (q: StreamingQuery) =>
  q
    .sink<{ id: number }>('out')
    .rows()
    .map((r) => r.id);
const failuresSoFar = (counter: string) => (existsSync(counter) ? Number(readFileSync(counter, 'utf8')) : 0);
/** Lets every pending callback and promise of this turn run (not a wait for time to pass). */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Starts the flaky job on a manual clock with a checkpoint: its map fails on a poisoned row the
 * first `failures` times it meets one (the count lives in the file `counter`).
 */
async function startFlaky(
  failures: number,
  restartPolicy: RestartPolicyInput,
  params: Record<string, string> = {},
): Promise<{ q: StreamingQuery; dir: string; counter: string }> {
  const dir = tempDir();
  const counter = join(dir, 'failures');
  const q = await startQuery(flaky, {
    clock: 'manual',
    checkpointLocation: join(dir, 'checkpoint'),
    params: { counter, failures, ...params },
    options: { restartPolicy },
  });
  return { q, dir, counter };
}

describe('restartPolicy: restarting a failed query from its checkpoint', () => {
  it('restarts after the backoff on the same handle, with a new run id per attempt and exactly-once output', async () => {
    const { q, counter } = await startFlaky(2, { maxRetries: 3, initialBackoffMs: 1000 });
    const restarts: RestartEvent[] = [];
    q.on('restarting', (e) => restarts.push(e));
    try {
      const firstRun = q.runId;
      q.source<FlakyRow>('in').addData([row(1), row(2), row(3)]);
      q.clock.advance(10_000); // epoch 0 ends: rows 1-3 are committed
      await q.processAllAvailable();
      const { state, isActive, attempt, retriesLeft, lastError, nextRestartAt } = q.status;
      assert.deepEqual(
        { state, isActive, attempt, retriesLeft, lastError, nextRestartAt },
        { state: 'active', isActive: true, attempt: 1, retriesLeft: 3, lastError: null, nextRestartAt: null },
      );

      let restarting = once(q, 'restarting');
      q.source<FlakyRow>('in').addData([row(4), poison(5), row(6)]);
      const [first] = (await restarting) as [RestartEvent];
      assert.equal(first.attempt, 1);
      assert.equal(first.backoffMs, 1000);
      assert.equal(first.restartAt, q.clock.now() + 1000);
      assert.equal(first.retriesLeft, 2);
      assert.ok(first.error instanceof MillraceError);
      assert.equal(first.error.code, 'TASK_FAILED');
      assert.match(first.error.message, /flaky failure 1 on row 5/);
      const waiting = q.status;
      assert.equal(waiting.state, 'restarting');
      assert.equal(waiting.isActive, true);
      assert.equal(waiting.attempt, 1);
      assert.equal(waiting.retriesLeft, 2);
      assert.deepEqual(waiting.lastError, { code: 'TASK_FAILED', message: first.error.message });
      assert.equal(waiting.nextRestartAt, first.restartAt);
      assert.match(waiting.message, /attempt 1 failed \(flaky failure 1.*\); attempt 2 starts in 1000 ms/);
      assert.equal(q.exception, null, 'the query has not failed for good');
      assert.equal(await q.awaitTermination(0), false, 'awaitTermination waits through restarts');

      // Rows added while the query waits go to the next attempt.
      q.source<FlakyRow>('in').addData([row(7)]);
      restarting = once(q, 'restarting');
      q.clock.advance(1000); // attempt 2 starts, meets row 5 again and fails again
      const [second] = (await restarting) as [RestartEvent];
      assert.equal(second.attempt, 2);
      assert.equal(second.backoffMs, 2000);
      assert.equal(second.retriesLeft, 1);
      assert.match(second.error.message, /flaky failure 2 on row 5/);
      const secondRun = q.runId;
      assert.notEqual(secondRun, firstRun, 'a restart is a new run');

      const started = once(q, 'started');
      q.clock.advance(2000);
      await started;
      assert.notEqual(q.runId, secondRun);
      const running = q.status;
      assert.equal(running.state, 'active');
      assert.equal(running.attempt, 3);
      assert.equal(running.retriesLeft, 1);
      assert.equal(running.nextRestartAt, null);
      assert.deepEqual(running.lastError, { code: 'TASK_FAILED', message: second.error.message });

      await q.processAllAvailable();
      assert.deepEqual(ids(q), [1, 2, 3, 4, 5, 6, 7], 'each row once: the committed epoch is not redone');
      assert.equal(failuresSoFar(counter), 2);

      // Progress goes on coming from the handle, now from the third run.
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.equal(p.id, q.id);
      assert.equal(p.runId, q.runId);
    } finally {
      await q.stop();
    }
    await q.awaitTermination();
    assert.equal(q.status.state, 'terminated');
    assert.deepEqual(ids(q), [1, 2, 3, 4, 5, 6, 7]);
    assert.deepEqual(
      restarts.map((r) => r.attempt),
      [1, 2],
    );
  });

  it('gives up after maxRetries with the last error, and processAllAvailable rejects with it', async () => {
    const { q, counter } = await startFlaky(5, { maxRetries: 2, initialBackoffMs: 100, multiplier: 1 });
    const terminated = once(q, 'terminated');
    let next = once(q, 'restarting');
    q.source<FlakyRow>('in').addData([row(1), poison(2)]);
    const waiting = q.processAllAvailable().then(
      () => null,
      (e: unknown) => e,
    );
    for (const attempt of [1, 2]) {
      const [e] = (await next) as [RestartEvent];
      assert.equal(e.attempt, attempt);
      assert.equal(e.backoffMs, 100);
      next = once(q, 'restarting');
      q.clock.advance(100);
    }
    const error = await q.awaitTermination().then(
      () => assert.fail('the query should have failed'),
      (e: unknown) => e as MillraceError,
    );
    assert.equal(error.code, 'TASK_FAILED');
    assert.match(error.message, /flaky failure 3 on row 2/, 'the error of the last attempt');
    assert.equal(q.exception, error);
    assert.deepEqual(await terminated, [error]);
    assert.equal(await waiting, error);
    const status = q.status;
    assert.equal(status.state, 'failed');
    assert.equal(status.isActive, false);
    assert.equal(status.attempt, 3);
    assert.equal(status.retriesLeft, 0);
    assert.equal(status.nextRestartAt, null);
    assert.deepEqual(status.lastError, { code: 'TASK_FAILED', message: error.message });
    assert.equal(failuresSoFar(counter), 3, 'no attempt after the last retry');
  });

  it('grows the backoff by the multiplier up to maxBackoffMs, on the query clock', async () => {
    const { q } = await startFlaky(4, {
      maxRetries: 4,
      initialBackoffMs: 1000,
      multiplier: 3,
      maxBackoffMs: 5000,
    });
    try {
      let next = once(q, 'restarting');
      q.source<FlakyRow>('in').addData([row(1), poison(2), row(3)]);
      // Waits through every restart: the attempt that finally runs processes the rows.
      const done = q.processAllAvailable();
      const backoffs: number[] = [];
      for (let i = 0; i < 4; i++) {
        const [e] = (await next) as [RestartEvent];
        backoffs.push(e.backoffMs);
        assert.equal(e.restartAt, q.clock.now() + e.backoffMs);
        assert.equal(q.status.nextRestartAt, e.restartAt);
        q.clock.advance(e.backoffMs - 1);
        await tick();
        assert.equal(q.status.state, 'restarting', 'one ms before it is due, no attempt starts');
        assert.equal(q.status.attempt, e.attempt);
        next = once(q, 'restarting');
        q.clock.advance(1);
      }
      await done;
      assert.deepEqual(backoffs, [1000, 3000, 5000, 5000]);
      assert.deepEqual(ids(q), [1, 2, 3]);
      assert.equal(q.status.attempt, 5);
      assert.equal(q.status.retriesLeft, 0);
    } finally {
      await q.stop();
    }
  });

  it('restarts a micro-batch query, running the failed batch again', async () => {
    const { q, counter } = await startFlaky(
      1,
      { maxRetries: 1, initialBackoffMs: 500 },
      { trigger: 'microBatch' },
    );
    try {
      q.source<FlakyRow>('in').addData([row(1), row(2)]);
      await q.processAllAvailable();
      const restarting = once(q, 'restarting');
      q.source<FlakyRow>('in').addData([row(3), poison(4), row(5)]);
      const done = q.processAllAvailable(); // goes on through the restart
      const [e] = (await restarting) as [RestartEvent];
      assert.match(e.error.message, /flaky failure 1 on row 4/);
      q.clock.advance(500);
      await done;
      assert.deepEqual(ids(q), [1, 2, 3, 4, 5]);
      assert.deepEqual(
        q
          .sink('out')
          .epochs()
          .map((b) => b.epochId),
        [0, 1],
        'batch 1 failed, then ran again with the same id',
      );
      assert.equal(failuresSoFar(counter), 1);
    } finally {
      await q.stop();
    }
  });

  it('restarts when a worker thread dies', async () => {
    const { q } = await startFlaky(1, { maxRetries: 1, initialBackoffMs: 500 }, { fail: 'exit' });
    try {
      const restarting = once(q, 'restarting');
      q.source<FlakyRow>('in').addData([row(1), poison(2), row(3)]);
      const [e] = (await restarting) as [RestartEvent];
      assert.equal(e.error.code, 'TASK_FAILED');
      assert.match(e.error.message, /worker 0 ended unexpectedly/);
      const started = once(q, 'started');
      q.clock.advance(500);
      await started;
      await q.processAllAvailable();
      assert.deepEqual(ids(q), [1, 2, 3]);
    } finally {
      await q.stop();
    }
  });

  it('ends the query without another attempt when stop() comes during the backoff', async () => {
    const { q, counter } = await startFlaky(3, { maxRetries: 3, initialBackoffMs: 1000 });
    const restarting = once(q, 'restarting');
    q.source<FlakyRow>('in').addData([poison(1)]);
    const [e] = (await restarting) as [RestartEvent];
    await q.stop();
    await q.awaitTermination(); // a stop is not a failure
    assert.equal(q.exception, null);
    assert.equal(q.status.state, 'terminated');
    assert.equal(q.status.nextRestartAt, null);
    assert.deepEqual(q.status.lastError, { code: 'TASK_FAILED', message: e.error.message });
    q.clock.advance(10_000);
    await tick();
    assert.equal(q.status.attempt, 1, 'no attempt started after the stop');
    assert.equal(failuresSoFar(counter), 1);
    assert.throws(() => q.source('in').addData([row(2)]), { code: 'QUERY_NOT_ACTIVE' });
  });

  it('does not restart a failure that a new attempt would meet again (a row too large for a ring)', async () => {
    const q = await startQuery(widen, {
      checkpointLocation: join(tempDir(), 'checkpoint'),
      options: { restartPolicy: { maxRetries: 3 } },
    });
    let restarted = false;
    q.on('restarting', () => {
      restarted = true;
    });
    q.source('in').addData([{ size: 10 }, { size: 3000 }]);
    await assert.rejects(q.awaitTermination(), { code: 'RECORD_TOO_LARGE' });
    assert.equal(restarted, false);
    assert.equal(q.status.attempt, 1);
    assert.equal(q.status.retriesLeft, 3);
    assert.equal(q.status.lastError?.code, 'RECORD_TOO_LARGE');
  });

  it('gives up at once when another run took the checkpoint during the backoff (CHECKPOINT_IN_USE)', async () => {
    const { q, dir, counter } = await startFlaky(1, { maxRetries: 3, initialBackoffMs: 1000 });
    const restarting = once(q, 'restarting');
    q.source<FlakyRow>('in').addData([poison(1)]);
    await restarting;
    const holder = await startQuery(flaky, {
      clock: 'manual',
      checkpointLocation: join(dir, 'checkpoint'),
      params: { counter },
    });
    try {
      let again = false;
      q.on('restarting', () => {
        again = true;
      });
      q.clock.advance(1000);
      await assert.rejects(q.awaitTermination(), (e: MillraceError) => {
        assert.equal(e.code, 'CHECKPOINT_IN_USE');
        assert.ok(e.message.includes(String(process.pid)), e.message);
        return true;
      });
      assert.equal(again, false, 'not retried');
      assert.equal(q.status.attempt, 2, 'the attempt that could not start');
      assert.equal(q.status.retriesLeft, 2);
      assert.equal(q.status.lastError?.code, 'CHECKPOINT_IN_USE');
    } finally {
      await holder.stop();
    }
  });

  it('reports the failure in status without a restart policy', async () => {
    const dir = tempDir();
    const q = await startQuery(flaky, { clock: 'manual', params: { counter: join(dir, 'failures') } });
    q.source<FlakyRow>('in').addData([poison(1)]);
    const error = await q.awaitTermination().then(
      () => assert.fail('the query should have failed'),
      (e: unknown) => e as MillraceError,
    );
    const { attempt, retriesLeft, lastError, nextRestartAt, state } = q.status;
    assert.deepEqual(
      { attempt, retriesLeft, lastError, nextRestartAt, state },
      {
        attempt: 1,
        retriesLeft: 0,
        lastError: { code: 'TASK_FAILED', message: error.message },
        nextRestartAt: null,
        state: 'failed',
      },
    );
  });

  it('refuses a restart policy without a checkpoint location before any thread starts', async () => {
    await assert.rejects(
      startQuery(flaky, { params: { counter: join(tempDir(), 'failures') }, options: { restartPolicy: {} } }),
      { code: 'INVALID_ARGUMENT', message: /restartPolicy .*checkpoint location/ },
    );
  });
});

describe('the restartPolicy option', () => {
  const resolve = (restartPolicy: unknown, base = DEFAULT_QUERY_OPTIONS) =>
    resolveQueryOptions(base, { restartPolicy: restartPolicy as RestartPolicyInput }).restartPolicy;

  it('fills the fields not given with the defaults', () => {
    assert.deepEqual(resolve({}), {
      maxRetries: 3,
      initialBackoffMs: 1000,
      maxBackoffMs: 60_000,
      multiplier: 2,
    });
    assert.deepEqual(resolve({ maxRetries: 5 }), { ...DEFAULT_RESTART_POLICY, maxRetries: 5 });
    assert.equal(resolve({ maxRetries: Number.POSITIVE_INFINITY })?.maxRetries, Number.POSITIVE_INFINITY);
    assert.equal(DEFAULT_QUERY_OPTIONS.restartPolicy, null, 'off unless asked for');
  });

  it("merges over the job's policy, and null turns it off", () => {
    const job = resolveQueryOptions(DEFAULT_QUERY_OPTIONS, {
      restartPolicy: { initialBackoffMs: 50, maxBackoffMs: 50 },
    });
    assert.deepEqual(resolve({ maxRetries: 1 }, job), {
      maxRetries: 1,
      initialBackoffMs: 50,
      maxBackoffMs: 50,
      multiplier: 2,
    });
    assert.equal(resolve(null, job), null);
  });

  it('refuses values it cannot use with INVALID_ARGUMENT naming the field', () => {
    const bad: [unknown, RegExp][] = [
      [{ maxRetries: -1 }, /maxRetries/],
      [{ maxRetries: 1.5 }, /maxRetries/],
      [{ initialBackoffMs: -5 }, /initialBackoffMs/],
      [{ initialBackoffMs: '1s' }, /initialBackoffMs/],
      [{ maxBackoffMs: 500 }, /maxBackoffMs \(500\) must be at least initialBackoffMs \(1000\)/],
      [{ multiplier: 0.5 }, /multiplier/],
      [{ multiplier: Number.NaN }, /multiplier/],
      [{ retries: 3 }, /unknown restartPolicy field 'retries'/],
      ['yes', /restartPolicy must be an object/],
      [[1], /restartPolicy must be an object/],
    ];
    for (const [value, message] of bad) {
      assert.throws(() => resolve(value), { code: 'INVALID_ARGUMENT', message }, JSON.stringify(value));
    }
  });

  it('waits initial × multiplier^(k−1) before restart k, never more than the cap', () => {
    const policy = { ...DEFAULT_RESTART_POLICY, maxRetries: Number.POSITIVE_INFINITY };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].map((k) => backoffMs(policy, k)),
      [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000],
    );
    assert.equal(backoffMs(policy, 5000), 60_000, 'no overflow past the cap');
    assert.equal(backoffMs({ ...policy, initialBackoffMs: 0 }, 5000), 0);
  });

  it('retries task, checkpoint-write, sink-commit and side-output failures only', () => {
    const codes = [
      'TASK_FAILED',
      'CHECKPOINT_WRITE_FAILED',
      'SINK_COMMIT_FAILED',
      'SIDE_OUTPUT_WRITE_FAILED',
      'CHECKPOINT_IN_USE',
      'CHECKPOINT_CORRUPT',
    ] as const;
    assert.deepEqual(
      codes.map((c) => isRetryable(new MillraceError(c, 'x'))),
      [true, true, true, true, false, false],
    );
  });
});
