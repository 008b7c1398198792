import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type DeadLetter, MillraceError, type StreamingQueryProgress, startQuery } from '../../src/index.js';

const job = new URL('../fixtures/jobs/failing.js', import.meta.url);
const rows = (ids: number[]) => ids.map((id) => ({ id, amount: id }));

function workerResources(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'MessagePort' || r === 'Worker').length;
}

describe('a failure in user code', () => {
  it('fails the query with the original message and stack, the operator and the partition', async () => {
    const before = workerResources();
    const q = await startQuery(job);
    const terminated = once(q, 'terminated');
    q.source('in').addData(rows([1, 2]), 0);
    q.source('in').addData(rows([12, 13, 14]), 1);
    const error = await q.awaitTermination().then(
      () => assert.fail('the query should have failed'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof MillraceError);
    assert.equal(error.code, 'TASK_FAILED');
    assert.match(error.message, /unlucky amount in row 13/);
    assert.match(error.message, /operator map#1 'double'/);
    assert.match(error.message, /partition 1/);
    assert.deepEqual(error.operator, { id: 1, kind: 'map', name: 'double' });
    assert.equal(error.partition, 1);
    assert.deepEqual(error.sourceOffset, { source: 0, partition: 1, offset: 1 });
    assert.match(error.stack ?? '', /fixtures\/jobs\/failing\.js/, 'the stack points into the job module');
    assert.equal((error.cause as Error).name, 'RangeError');
    assert.equal(q.exception, error);
    assert.equal(q.status.state, 'failed');
    assert.deepEqual(await terminated, [error]);
    await assert.rejects(q.processAllAvailable(), (e) => e === error);
    await q.stop();
    assert.equal(workerResources(), before, 'every worker and port is gone');
  });

  it('rejects a processAllAvailable that is waiting when the query fails', async () => {
    const q = await startQuery(job);
    q.source('in').addData(rows([1, 13]), 0);
    await assert.rejects(q.processAllAvailable(), { code: 'TASK_FAILED', message: /unlucky/ });
    await q.stop();
  });

  it('skips rows user code throws on under onBadRecord skip, and counts them in progress', async () => {
    const q = await startQuery(job, { params: { onBadRecord: 'skip' }, clock: 'manual' });
    try {
      q.source('in').addData(rows([1, 13, 2]), 0);
      q.source('in').addData(rows([13, 3]), 1);
      await q.processAllAvailable();
      assert.deepEqual(
        q
          .sink<{ id: number }>('out')
          .rows()
          .map((r) => r.id),
        [1, 2, 3],
      );
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.deepEqual(p.badRecords, { skipped: 2, deadLettered: 0 });
      assert.equal(p.numInputRows, 5);
      assert.equal(p.sink.numOutputRows, 3);
    } finally {
      await q.stop();
    }
  });

  it('sends rows user code throws on to the dead letters under onBadRecord deadLetter', async () => {
    const q = await startQuery(job, { params: { onBadRecord: 'deadLetter' } });
    const events: DeadLetter[] = [];
    q.on('deadLetter', (d) => events.push(d));
    try {
      q.source('in').addData(rows([1, 13, 2]), 1);
      await q.processAllAvailable();
      const letters = q.deadLetters();
      assert.equal(letters.length, 1);
      const [letter] = letters;
      assert.deepEqual(letter?.row, { id: 13, amount: 13 });
      assert.deepEqual(letter?.error, { name: 'RangeError', message: 'unlucky amount in row 13' });
      assert.deepEqual(letter?.operator, { id: 1, kind: 'map', name: 'double' });
      assert.equal(letter?.partition, 1);
      assert.deepEqual(letter?.sourceOffset, { source: 0, partition: 1, offset: 1 });
      assert.deepEqual(events, letters);
      assert.equal(q.sink('out').rows().length, 2);
    } finally {
      await q.stop();
    }
  });
});
