import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EpochLogs } from '../../src/checkpoint/epoch-logs.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { readFilesSinkOutput, type StreamingQuery, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/generated-async-sink.js', import.meta.url);
const tempDir = tempDirs('millrace-generated-redo');

function commits(q: StreamingQuery, n: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fewer than ${n} epochs committed in 20 s`)), 20_000);
    let seen = 0;
    q.on('epochCommitted', (epoch) => {
      if (++seen !== n) return;
      clearTimeout(timer);
      resolve(epoch);
    });
  });
}

// Regression (found by the crash campaign): a real-time run redoing an epoch whose offsets were
// logged and whose commit was not started its generated sources before their redo marker came, so
// a source could make rows past the epoch's end and report a larger end offset. The files sink
// kept the first attempt's files for that epoch (its manifest existed), and the rows in between
// were lost.
describe('a real-time run that redoes an epoch of a generated source', () => {
  it('ends the epoch where its offsets say, so no row is lost or written twice', async () => {
    const dir = tempDir();
    const path = join(dir, 'out');
    const checkpoint = join(dir, 'checkpoint');
    const params = {
      source: 'rate',
      sink: 'files',
      path,
      rowsPerSecond: '2000',
      interval: '200 milliseconds',
    };
    const first = await startQuery(job, { params, checkpointLocation: checkpoint });
    const last = await commits(first, 3);
    await first.stop();
    // The crash came after the last epoch's offsets and manifest, before its commit file: the
    // next run redoes it. Meanwhile its generators fall behind (rows keep coming due).
    const logs = new EpochLogs(new CheckpointLayout(checkpoint));
    const newest = Math.max(last, ...(await logs.commitEpochs()));
    rmSync(join(checkpoint, 'commits', String(newest)));
    const redone = (await logs.readOffsets(newest))!.sources[0]!.offsets;
    const second = await startQuery(job, { params, checkpointLocation: checkpoint });
    await commits(second, 2);
    await second.stop();
    const again = (await logs.readOffsets(newest))!.sources[0]!.offsets;
    assert.deepEqual(again, redone, 'the redone epoch ends where it ended before');
    const end = (await logs.readOffsets(Math.max(...(await logs.commitEpochs()))))!.sources[0]!.offsets;
    const values = ((await readFilesSinkOutput(path)) as { value: number }[]).map((r) => r.value);
    const expected: number[] = [];
    for (const p of [0, 1]) for (let o = 0; o < end[p]!; o++) expected.push(o * 2 + p);
    assert.deepEqual(
      values.sort((a, b) => a - b),
      expected.sort((a, b) => a - b),
    );
  });
});
