import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { withChecksum } from '../../src/checkpoint/files.js';
import {
  metadataOf,
  order,
  type Params,
  removeTempDirs,
  runOnce,
  snapshot,
  start,
  tempDir,
} from './evolution-harness.js';

/**
 * A checkpoint whose `metadata` is gone while its logs, state or source files remain was written
 * by a query whose id, plan and state schema are no longer known: a run must refuse it rather than
 * start over on top of it.
 */

after(removeTempDirs);

const grouped = { shape: 'aggregate', keys: 'card' };

/** The error a start on `dir` fails with (a run that starts is stopped: the test then fails). */
async function refusal(dir: string, params: Params): Promise<Error & { code?: string }> {
  try {
    const q = await start(dir, params);
    await q.stop();
  } catch (e) {
    return e as Error & { code?: string };
  }
  assert.fail(`a run started on ${dir}`);
}

describe('a checkpoint without its metadata', () => {
  it('is refused with CHECKPOINT_CORRUPT naming the metadata, and the run writes nothing', async () => {
    const dir = tempDir();
    await runOnce(dir, grouped, { orders: [order('o1', 5, 'c1'), order('o2', 7, 'c2')] });
    rmSync(join(dir, 'metadata'));
    const before = snapshot(dir);
    const e = await refusal(dir, grouped);
    assert.equal(e.code, 'CHECKPOINT_CORRUPT', e.message);
    assert.ok(e.message.includes(join(dir, 'metadata')), e.message);
    assert.match(e.message, /is missing/);
    assert.deepEqual(snapshot(dir), before, 'no new metadata, lock or log was written');
    assert.equal(existsSync(join(dir, 'metadata')), false);
  });

  it('is refused rather than resumed under a changed grouping key, which would read the old state as the new key', async () => {
    const dir = tempDir();
    await runOnce(dir, grouped, { orders: [order('o1', 5, 'c1')] });
    rmSync(join(dir, 'metadata'));
    assert.equal((await refusal(dir, { shape: 'aggregate', keys: 'merchant' })).code, 'CHECKPOINT_CORRUPT');
  });

  it('is refused when only source files remain of it', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'sources', '0'), { recursive: true });
    writeFileSync(join(dir, 'sources', '0', 'schedule'), withChecksum(Buffer.from('{"startTimeMs":0}')));
    assert.equal((await refusal(dir, grouped)).code, 'CHECKPOINT_CORRUPT');
  });
});

describe('a fresh checkpoint', () => {
  it('is an empty directory, or one holding only a stale lock or empty log directories: a run starts there', async () => {
    const empty = tempDir();
    const withLock = tempDir();
    writeFileSync(join(withLock, 'lock'), 'not a lock at all');
    const withDirs = tempDir();
    for (const d of ['offsets', 'commits', 'state/1/0']) mkdirSync(join(withDirs, d), { recursive: true });
    for (const dir of [empty, withLock, withDirs]) {
      const q = await runOnce(dir, grouped, { orders: [order('o1', 5)] });
      assert.deepEqual(q.sink('out').rows(), [{ card: 'c1', n: 1 }], dir);
      assert.equal((await metadataOf(dir)).id, q.id, 'the run created the checkpoint');
    }
  });
});
