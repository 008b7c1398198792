import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EpochLogs } from '../../src/checkpoint/epoch-logs.js';
import { readChecked, withChecksum, writeFileAtomic } from '../../src/checkpoint/files.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { CheckpointLock } from '../../src/checkpoint/lock.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const tempDir = tempDirs('millrace-ckpt');

describe('checkpoint files', () => {
  it('are written atomically with a checksum and read back, leaving no temporary file', async () => {
    const dir = tempDir();
    const path = join(dir, 'metadata');
    await writeFileAtomic(path, Buffer.from('{"id":"q"}'));
    assert.equal((await readChecked(path)).toString(), '{"id":"q"}');
    await writeFileAtomic(path, Buffer.from('{"id":"r"}'));
    assert.equal((await readChecked(path)).toString(), '{"id":"r"}');
    assert.deepEqual(readdirSync(dir), ['metadata']);
  });

  it('name the file when a byte is flipped, when it is truncated, or when its trailer is gone', async () => {
    const dir = tempDir();
    const path = join(dir, 'offsets-7');
    await writeFileAtomic(path, Buffer.from('v1\n{"batchWatermarkMs":0}\n{"0":12}\n'));
    const good = readFileSync(path);
    const flipped = Buffer.from(good);
    flipped[5] = flipped[5]! ^ 0x01;
    writeFileSync(path, flipped);
    await assert.rejects(readChecked(path), {
      code: 'CHECKPOINT_CORRUPT',
      message: /offsets-7 is corrupt: its checksum/,
    });
    writeFileSync(path, good.subarray(0, good.length - 4));
    await assert.rejects(readChecked(path), {
      code: 'CHECKPOINT_CORRUPT',
      message: /offsets-7 is corrupt: its checksum trailer is missing/,
    });
    writeFileSync(path, good.subarray(0, 5));
    await assert.rejects(readChecked(path), { code: 'CHECKPOINT_CORRUPT', message: /truncated/ });
    assert.equal(withChecksum(Buffer.from('')).length, 17, 'an 8-byte prefix, 8 hex digits and a newline');
  });
});

describe('the offset and commit logs', () => {
  it('keep one file per epoch in either format, list them in order, and purge old ones', async () => {
    const logs = new EpochLogs(new CheckpointLayout(tempDir()));
    await logs.init();
    const metadata = { batchWatermarkMs: 5, batchTimestampMs: 10 };
    await logs.writeOffsets(10, {
      format: 'v1',
      metadata,
      sources: [{ key: '0', offsets: { 0: 12, 1: 3 } }],
    });
    await logs.writeOffsets(2, {
      format: 'v2',
      metadata,
      sources: [
        { key: 'orders', offsets: { 0: 1 } },
        { key: 'refunds', offsets: { 0: 4 } },
      ],
    });
    await logs.writeCommit(2, { nextBatchWatermarkMs: 5 });
    assert.deepEqual(await logs.offsetEpochs(), [2, 10]);
    assert.deepEqual(await logs.commitEpochs(), [2]);
    assert.deepEqual(await logs.readOffsets(10), {
      format: 'v1',
      metadata,
      sources: [{ key: '0', offsets: { 0: 12, 1: 3 } }],
    });
    assert.deepEqual(
      (await logs.readOffsets(2))?.sources.map((s) => s.key),
      ['orders', 'refunds'],
    );
    assert.deepEqual(await logs.readCommit(2), { nextBatchWatermarkMs: 5 });
    assert.equal(await logs.readCommit(10), undefined);
    await logs.purgeBefore(10);
    assert.deepEqual(await logs.offsetEpochs(), [10]);
    assert.deepEqual(await logs.commitEpochs(), []);
  });
});

describe('the checkpoint lock', () => {
  it('refuses a second owner while the first is alive, naming it, and is free again once released', async () => {
    const path = join(tempDir(), 'lock');
    const first = await CheckpointLock.acquire(path, { queryId: 'q1', runId: 'r1' });
    await assert.rejects(CheckpointLock.acquire(path, { queryId: 'q1', runId: 'r2' }), {
      code: 'CHECKPOINT_IN_USE',
      message: new RegExp(`in use by query q1 \\(run r1, process ${process.pid}`),
    });
    await first.release();
    const second = await CheckpointLock.acquire(path, { queryId: 'q1', runId: 'r3' });
    await second.release();
  });

  it('takes over the lock of an owner that died', async () => {
    const path = join(tempDir(), 'lock');
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    const stale = {
      queryId: 'q',
      runId: 'old',
      pid: Number(dead),
      host: (await import('node:os')).hostname(),
      startedAt: 0,
      heartbeatAt: 0,
    };
    writeFileSync(path, withChecksum(Buffer.from(JSON.stringify(stale))));
    const lock = await CheckpointLock.acquire(path, { queryId: 'q', runId: 'new' });
    await lock.release();
  });

  it('takes over a lock from another host whose heartbeat went stale, and not a fresh one', async () => {
    const path = join(tempDir(), 'lock');
    const other = {
      queryId: 'q',
      runId: 'away',
      pid: 1,
      host: 'elsewhere',
      startedAt: 0,
      heartbeatAt: Date.now(),
    };
    writeFileSync(path, withChecksum(Buffer.from(JSON.stringify(other))));
    await assert.rejects(CheckpointLock.acquire(path, { queryId: 'q', runId: 'me' }), {
      code: 'CHECKPOINT_IN_USE',
    });
    writeFileSync(
      path,
      withChecksum(Buffer.from(JSON.stringify({ ...other, heartbeatAt: Date.now() - 60_000 }))),
    );
    const lock = await CheckpointLock.acquire(path, { queryId: 'q', runId: 'me' });
    await lock.release();
  });
});
