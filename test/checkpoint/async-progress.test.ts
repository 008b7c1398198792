import assert from 'node:assert/strict';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MillraceError, type StreamingQuery, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/async-progress.js', import.meta.url);

const tempDir = tempDirs('millrace-async-progress');

const epochsIn = (dir: string) =>
  readdirSync(dir)
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);

/** Adds one number every 100 ms of the manual clock, `steps` times; every step is processed. */
async function feed(q: StreamingQuery, steps: number): Promise<void> {
  for (let i = 1; i <= steps; i++) {
    q.source<number>('in').addData([i]);
    q.clock.advance(100);
    await q.processAllAvailable();
  }
}

describe('asynchronous progress tracking', () => {
  for (const trigger of ['realTime', 'processingTime']) {
    it(`logs offsets and commits for one epoch a second, and the last one at a graceful stop (${trigger})`, async () => {
      const ckpt = tempDir();
      const q = await startQuery(job, { params: { trigger }, clock: 'manual', checkpointLocation: ckpt });
      const committed: number[] = [];
      q.on('epochCommitted', (e) => committed.push(e));
      await feed(q, 25);
      const logged = epochsIn(join(ckpt, 'commits'));
      assert.ok(committed.length >= 20, `every epoch commits: ${committed.join(' ')}`);
      assert.ok(logged.length >= 2 && logged.length <= 4, `a few epochs logged: ${logged.join(' ')}`);
      for (let i = 1; i < logged.length; i++) {
        assert.ok(logged[i]! - logged[i - 1]! >= 9, `one epoch a second: ${logged.join(' ')}`);
      }
      assert.deepEqual(epochsIn(join(ckpt, 'offsets')), logged);
      await q.stop();
      assert.equal(epochsIn(join(ckpt, 'commits')).at(-1), committed.at(-1));
      assert.deepEqual(
        q
          .sink<number>('out')
          .rows()
          .sort((a, b) => a - b),
        Array.from({ length: 25 }, (_, i) => i + 1),
      );
    });
  }

  it('resumes after a crash from the last epoch logged, processing what came after it again', async () => {
    const ckpt = tempDir();
    const q = await startQuery(job, { clock: 'manual', checkpointLocation: ckpt });
    await feed(q, 25);
    // What a crash now would leave behind (the copy has no owner: this process holds the lock).
    const crashed = tempDir();
    cpSync(ckpt, crashed, { recursive: true });
    rmSync(join(crashed, 'lock'));
    await q.stop();
    const lastLogged = epochsIn(join(crashed, 'commits')).at(-1)!;
    const after = q
      .sink<number>('out')
      .epochs()
      .filter((e) => e.epochId > lastLogged)
      .flatMap((e) => e.rows);
    assert.ok(after.length > 0, 'some rows came after the last logged epoch');
    const again = await startQuery(job, {
      clock: 'manual',
      checkpointLocation: crashed,
      initialData: { in: Array.from({ length: 25 }, (_, i) => i + 1) },
    });
    try {
      await again.processAllAvailable();
      assert.deepEqual(again.sink<number>('out').rows(), after);
    } finally {
      await again.stop();
    }
  });

  for (const [params, why] of [
    [{ trigger: 'availableNow' }, /Trigger\.availableNow\(\)/],
    [{ files: '/tmp/never-written' }, /sinks\.files/],
  ] as const) {
    it(`is refused at plan time with ${JSON.stringify(params)}`, async () => {
      await assert.rejects(
        startQuery(job, { params, clock: 'manual', checkpointLocation: tempDir() }),
        (e: unknown) =>
          e instanceof MillraceError && e.code === 'UNSUPPORTED_OPERATION' && why.test(e.message),
      );
    });
  }
});
