import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, it } from 'node:test';
import { DIAGNOSTICS_CHANNELS, startQuery } from '../../src/index.js';
import { publish } from '../../src/metrics/diagnostics.js';
import type { Side } from '../fixtures/jobs/join-chains.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const joinChains = new URL('../fixtures/jobs/join-chains.js', import.meta.url);
const failing = new URL('../fixtures/jobs/failing.js', import.meta.url);
const tempDir = tempDirs('millrace-diagnostics');

/** Records what every Millrace channel publishes while `run` runs, by channel name. */
async function recorded(run: () => Promise<void>): Promise<Map<string, Record<string, unknown>[]>> {
  const seen = new Map<string, Record<string, unknown>[]>();
  const handlers = Object.values(DIAGNOSTICS_CHANNELS).map((ch) => {
    const name = String(ch.name);
    const handler = (message: unknown) => {
      if (!seen.has(name)) seen.set(name, []);
      seen.get(name)!.push(message as Record<string, unknown>);
    };
    subscribe(name, handler);
    return () => unsubscribe(name, handler);
  });
  try {
    await run();
  } finally {
    for (const off of handlers) off();
  }
  return seen;
}

describe('diagnostics channels', () => {
  it('tell of a query’s start, commits, late rows and end', async () => {
    const seen = await recorded(async () => {
      const q = await startQuery(joinChains, {
        params: { case: 'dedup-join', trigger: 'microBatch' },
        clock: 'manual',
        queryName: 'diagnosed',
        checkpointLocation: tempDir(),
      });
      const side = (t: number, note: string): Side => ({ id: 'a', t, note });
      q.source<Side>('left').addData([side(1000, 'x'), side(2000, 'y')]);
      q.source<Side>('right').addData([side(3000, 'R3')]);
      await q.processAllAvailable();
      q.source<Side>('left').addData([side(1000, 'x')]);
      await q.processAllAvailable();
      await q.stop();
    });
    const [start] = seen.get('millrace:query:start')!;
    assert.equal(start!.name, 'diagnosed');
    assert.equal(start!.attempt, 1);
    const commits = seen.get('millrace:epoch:commit')!;
    assert.deepEqual(
      commits.map((c) => c.epoch),
      commits.map((_, i) => i),
      'every epoch, in order',
    );
    assert.ok(commits.every((c) => c.checkpointed === true && c.name === 'diagnosed'));
    const late = seen.get('millrace:row:late')!;
    assert.equal(late.length, 1);
    assert.deepEqual((late[0]!.lateRow as { row: unknown }).row, { id: 'a', lt: 1000, ln: 'x' });
    assert.deepEqual(
      seen.get('millrace:query:end')!.map((e) => e.error),
      [null],
      'it stopped, without an error',
    );
  });

  it('tell of a bad record that went to the dead letters', async () => {
    const seen = await recorded(async () => {
      const q = await startQuery(failing, { params: { onBadRecord: 'deadLetter' }, clock: 'manual' });
      q.source<{ id: number; amount: number }>('in').addData([
        { id: 1, amount: 12 },
        { id: 2, amount: 13 },
      ]);
      await q.processAllAvailable();
      await q.stop();
    });
    const bad = seen.get('millrace:row:bad')!;
    assert.equal(bad.length, 1);
    assert.match(JSON.stringify(bad[0]!.deadLetter), /unlucky amount in row 2/);
  });

  it('build no message when no one subscribes', () => {
    const ch = DIAGNOSTICS_CHANNELS.epochCommit;
    let built = 0;
    const make = () => {
      built++;
      return {};
    };
    publish(ch, make);
    assert.equal(built, 0, 'nothing built without a subscriber');
    const handler = () => {};
    subscribe(String(ch.name), handler);
    publish(ch, make);
    unsubscribe(String(ch.name), handler);
    assert.equal(built, 1, 'built once someone listens');
  });
});
