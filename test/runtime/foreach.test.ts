import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { BroadcastChannel } from 'node:worker_threads';
import { startQuery } from '../../src/index.js';

const job = new URL('../fixtures/jobs/foreach.js', import.meta.url);

/** Collects what the job's foreach writer reports, in order. */
function listen(name: string) {
  const channel = new BroadcastChannel(name);
  const calls: { call: string; [k: string]: unknown }[] = [];
  channel.onmessage = (e) => calls.push((e as MessageEvent).data);
  return { calls, close: () => channel.close() };
}

/** Waits until `predicate` holds on messages still in flight (bounded, no sleeps as sync). */
async function until(predicate: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!predicate()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('the foreach sink', () => {
  for (const asyncProcess of [false, true]) {
    it(`opens the partition for the epoch, processes each row${asyncProcess ? ' (async)' : ''}, and closes at the end`, async () => {
      const name = randomUUID();
      const log = listen(name);
      const q = await startQuery(job, { params: { channel: name, async: asyncProcess } });
      try {
        q.source('in').addData([{ n: 1 }, { n: 2 }, { n: 3 }]);
        await q.processAllAvailable();
        await q.stop();
        await until(() => log.calls.some((c) => c.call === 'close'), 'close');
        assert.deepEqual(log.calls, [
          { call: 'open', partition: 0, epochId: 0 },
          { call: 'process', row: { n: 1 } },
          { call: 'process', row: { n: 2 } },
          { call: 'process', row: { n: 3 } },
          { call: 'close', error: null },
        ]);
      } finally {
        log.close();
        await q.stop();
      }
    });
  }

  it('fails the query when the writer throws, and closes it with the error', async () => {
    const name = randomUUID();
    const log = listen(name);
    const q = await startQuery(job, { params: { channel: name } });
    try {
      q.source('in').addData([{ n: 1 }, { n: -1 }]);
      await assert.rejects(q.awaitTermination(), {
        code: 'TASK_FAILED',
        message: /negative rows are not welcome \(operator sink#-1 'ForeachSink', stage 0, partition 0/,
      });
      await until(() => log.calls.some((c) => c.call === 'close'), 'close');
      assert.deepEqual(log.calls.at(-1), { call: 'close', error: 'negative rows are not welcome' });
    } finally {
      log.close();
    }
  });
});
