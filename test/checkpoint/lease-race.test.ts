import assert from 'node:assert/strict';
import { type ChildProcess, fork, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { withChecksum } from '../../src/checkpoint/files.js';
import { readLock } from '../../src/checkpoint/inspect.js';
import type { ContenderMessage, ContenderReply } from '../fixtures/lease-contender.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const CONTENDER = fileURLToPath(new URL('../fixtures/lease-contender.js', import.meta.url));
const CONTENDERS = 4;
const TRIALS = 40;

const tempDir = tempDirs('millrace-lease-race');
const contenders: ChildProcess[] = [];
after(() => {
  for (const c of contenders) c.kill('SIGKILL');
});

/** The next message of each contender whose type is `type`. */
function replies<T extends ContenderReply['type']>(type: T): Promise<Extract<ContenderReply, { type: T }>[]> {
  return Promise.all(
    contenders.map(
      (c) =>
        new Promise<Extract<ContenderReply, { type: T }>>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`no '${type}' from contender ${c.pid} in 30 s`)),
            30_000,
          );
          const onMessage = (m: ContenderReply) => {
            if (m.type !== type) return;
            clearTimeout(timer);
            c.off('message', onMessage);
            resolve(m as Extract<ContenderReply, { type: T }>);
          };
          c.on('message', onMessage);
        }),
    ),
  );
}

const tell = (c: ChildProcess, m: ContenderMessage) => c.send(m);

describe('the checkpoint lease under contention', () => {
  it(`is taken over by exactly one of ${CONTENDERS} processes racing for the same stale lock, in each of ${TRIALS} trials`, async () => {
    const dir = tempDir();
    const ready = Promise.all(
      Array.from({ length: CONTENDERS }, async () => {
        const c = fork(CONTENDER, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
        contenders.push(c);
        const [m] = (await once(c, 'message')) as [ContenderReply];
        assert.equal(m.type, 'ready');
      }),
    );
    await ready;
    const gone = Number(
      spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString(),
    );
    const outcomes: { trial: number; winners: string[]; losers: (string | undefined)[] }[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const path = join(dir, String(trial), 'lock');
      mkdirSync(join(dir, String(trial)));
      // Every other trial the stale lock's owner is gone; in the others the lock is unreadable.
      if (trial % 2 === 0) {
        const owner = {
          queryId: 'race',
          runId: 'dead',
          pid: gone,
          host: hostname(),
          startedAt: 0,
          heartbeatAt: 0,
        };
        writeFileSync(path, withChecksum(Buffer.from(JSON.stringify(owner))));
      } else {
        writeFileSync(path, '{"queryId":"race","runId":"torn","pid":');
      }
      // The barrier: every contender has its trial before any is told to go.
      const armed = replies('armed');
      for (const [i, c] of contenders.entries()) tell(c, { type: 'arm', path, runId: `t${trial}-c${i}` });
      await armed;
      const results = replies('result');
      for (const c of contenders) tell(c, { type: 'go' });
      const done = await results;
      const winners = done.filter((r) => r.won).map((r) => r.runId);
      outcomes.push({ trial, winners, losers: done.filter((r) => !r.won).map((r) => r.code) });
      if (winners.length === 1)
        assert.equal((await readLock(path)).runId, winners[0], 'the lock names the winner');
    }
    const wrong = outcomes.filter((o) => o.winners.length !== 1);
    assert.deepEqual(wrong, [], `trials without exactly one winner: ${wrong.length} of ${TRIALS}`);
    for (const o of outcomes) {
      assert.deepEqual(
        o.losers,
        new Array(CONTENDERS - 1).fill('CHECKPOINT_IN_USE'),
        `trial ${o.trial}: every loser is told the checkpoint is in use`,
      );
    }
  });
});
