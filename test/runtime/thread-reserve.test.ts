import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type StreamingQuery, startQuery } from '../../src/index.js';

const job = new URL('../fixtures/jobs/threads.js', import.meta.url);
const udfJob = new URL('../fixtures/jobs/arrow-udfs.js', import.meta.url);

/** Runs rows 1..4 through the query, two per partition; the threads that mapped them. */
async function threadsOf(q: StreamingQuery): Promise<number[]> {
  q.source('in').addData([{ id: 1 }, { id: 2 }], 0);
  q.source('in').addData([{ id: 3 }, { id: 4 }], 1);
  await q.processAllAvailable();
  const threads = q
    .sink<{ thread: number }>('out')
    .rows()
    .map((r) => r.thread);
  return [...new Set(threads)].sort((a, b) => a - b);
}

describe('the threads of a process', () => {
  it('run a query started after another one ended on the threads the first one used', async () => {
    const first = await startQuery(job);
    const before = await threadsOf(first).finally(() => first.stop());
    assert.equal(before.length, 2, 'two workers, two threads');
    const second = await startQuery(job);
    const after = await threadsOf(second).finally(() => second.stop());
    assert.deepEqual(after, before);
  });

  it('end with a query that failed: the next query runs on new threads', async () => {
    const failed = await startQuery(job);
    const before = await threadsOf(failed);
    failed.source('in').addData([{ id: 13 }], 0);
    await assert.rejects(failed.awaitTermination(), { code: 'TASK_FAILED', message: /unlucky row 13/ });
    await failed.stop();
    const next = await startQuery(job);
    const after = await threadsOf(next).finally(() => next.stop());
    assert.equal(after.length, 2);
    assert.deepEqual(
      after.filter((t) => before.includes(t)),
      [],
      'no thread of the failed run is reused',
    );
  });

  it('give two queries running at once a thread each of their own', async () => {
    const a = await startQuery(job);
    const b = await startQuery(job);
    try {
      const [ta, tb] = await Promise.all([threadsOf(a), threadsOf(b)]);
      assert.deepEqual(
        ta.filter((t) => tb.includes(t)),
        [],
      );
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('run the Arrow UDFs of a query started after another one ended on the UDF thread it used', async () => {
    const udfThread = async () => {
      const q = await startQuery(udfJob, { params: { op: 'thread', isolate: 'true' } });
      try {
        q.source('readings').addData([{ id: 1, x: 1, y: 1, tag: 'a' }]);
        await q.processAllAvailable();
        return q.sink<{ udfThread: number }>('out').rows()[0]!.udfThread;
      } finally {
        await q.stop();
      }
    };
    const first = await udfThread();
    assert.equal(await udfThread(), first);
  });
});
