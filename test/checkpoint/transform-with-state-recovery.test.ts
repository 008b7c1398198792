import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import {
  type StartOptions,
  type StreamingQuery,
  type StreamingQueryProgress,
  startQuery,
} from '../../src/index.js';
import type { Event, Out } from '../fixtures/jobs/stateful-processors.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/stateful-processors.js', import.meta.url);
const tempDir = tempDirs('millrace-tws');
const ev = (user: string, n?: number): Event => ({ user, ts: 0, ...(n === undefined ? {} : { n }) });

/** Runs one attempt on `checkpoint`, continuing `previous`; stops it and returns it. */
async function run(
  checkpoint: string,
  params: StartOptions['params'],
  previous: StreamingQuery | undefined,
  body: (q: StreamingQuery) => Promise<void>,
  clockStart = 0,
): Promise<StreamingQuery> {
  const q = await startQuery(job, {
    params,
    clock: 'manual',
    clockStart,
    checkpointLocation: checkpoint,
    continueFrom: previous,
  });
  try {
    await body(q);
  } finally {
    await q.stop();
  }
  return q;
}

describe('transformWithState recovery', () => {
  it('restores value state on restart, and ignores the initial state then', async () => {
    const dir = tempDir();
    const params = { case: 'counter', initial: 1, partitions: 2 };
    const first = await run(dir, params, undefined, async (q) => {
      q.source<Event>('events').addData([ev('ann'), ev('cy')]);
      await q.processAllAvailable();
    });
    const second = await run(dir, params, first, async (q) => {
      q.source<Event>('events').addData([ev('ann'), ev('bob'), ev('cy')]);
      await q.processAllAvailable();
    });
    const rows = second.sink<Extract<Out, { kind: 'row' }>>('out').rows();
    assert.deepEqual(rows.map((r) => `${r.user}=${r.count}`).sort(), [
      'ann=101',
      'ann=102',
      'bob=201',
      'cy=1',
      'cy=2',
    ]);
  });

  it('keeps timers across a restart: a timer armed before the stop fires in the next run', async () => {
    const dir = tempDir();
    const params = { case: 'inactivity' };
    const first = await run(dir, params, undefined, async (q) => {
      q.source<Event>('events').addData([ev('ann')]); // timer at 10 s
      await q.processAllAvailable();
    });
    const second = await run(
      dir,
      params,
      first,
      async (q) => {
        q.source<Event>('events').addData([ev('bob')]); // 12 s: ann's timer is due
        await q.processAllAvailable();
      },
      12_000,
    );
    const out = second.sink<Out>('out').rows();
    assert.deepEqual(
      out.map((r) => `${r.kind}:${r.user}`),
      ['row:ann', 'timer:ann', 'row:bob'],
    );
    assert.equal((out[1] as Extract<Out, { kind: 'timer' }>).expiry, 10_000);
  });

  it('leaves expired state out of the checkpoint', async () => {
    const dir = tempDir();
    const params = { case: 'remember' };
    const first = await run(dir, params, undefined, async (q) => {
      q.source<Event>('events').addData([ev('ann', 1), ev('bob', 2)]);
      await q.processAllAvailable();
      q.clock.advance(11_000); // past the 10-s TTL, with no row to read the values
    });
    await run(
      dir,
      params,
      first,
      async (q) => {
        const progress = once(q, 'progress');
        q.clock.advance(1_000);
        const [p] = (await progress) as [StreamingQueryProgress];
        assert.equal(p.stateOperators[0]!.numRowsTotal, 0);
      },
      11_000,
    );
  });

  it("refuses to resume when a processor's state variables changed", async () => {
    const dir = tempDir();
    await run(dir, { case: 'counter' }, undefined, async (q) => {
      q.source<Event>('events').addData([ev('ann')]);
      await q.processAllAvailable();
    });
    await assert.rejects(
      startQuery(job, {
        params: { case: 'counter', stateName: 'total' },
        clock: 'manual',
        checkpointLocation: dir,
      }),
      (e: Error & { code?: string }) =>
        e.code === 'CHECKPOINT_INCOMPATIBLE_CHANGE' && /count: value\] to \[total: value\]/.test(e.message),
    );
  });
});
