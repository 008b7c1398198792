import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import { readManifest } from '../../src/connectors/files/manifest.js';
import { readFilesSinkOutput, type StreamingQuery, startQuery } from '../../src/index.js';
import { fakeIO } from '../cli/fake-io.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/overload.js', import.meta.url);
const tempDir = tempDirs('millrace-overload');

/** `count` rows `{ value: 0 … count − 1 }` in files of 1000 rows. */
function putRows(dir: string, count: number): void {
  mkdirSync(dir, { recursive: true });
  for (let f = 0; f * 1000 < count; f++) {
    const lines: string[] = [];
    for (let i = f * 1000; i < Math.min(count, (f + 1) * 1000); i++) lines.push(JSON.stringify({ value: i }));
    writeFileSync(join(dir, `${String(f).padStart(4, '0')}.jsonl`), `${lines.join('\n')}\n`);
  }
}

function firstCommit(q: StreamingQuery, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no epoch committed within ${timeoutMs} ms`)), timeoutMs);
    q.once('epochCommitted', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

// Regression: a barrier waited until a generated source had made every row it owed by then, so
// an overloaded query's epochs stretched with its backlog (2-s epochs took 20–30 s), and a stop
// waited for the whole backlog, then failed with QUERY_STOP_TIMEOUT.
describe('an overloaded query', () => {
  it('ends an epoch with the rows it made by the barrier, not every row its generator owed', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    // 20 000 rows/s owed, at most 2 × 5 000 rows/s made (200 µs of CPU a row, two partitions).
    const q = await startQuery(job, {
      params: { source: 'rate', rate: '20000', delayMicros: '200', out, interval: '300 milliseconds' },
      checkpointLocation: join(dir, 'checkpoint'),
    });
    try {
      await firstCommit(q, 30_000);
    } finally {
      await q.stop({ timeoutMs: 0 });
    }
    const rows = (await readFilesSinkOutput(out)) as { value: number }[];
    assert.equal(new Set(rows.map((r) => r.value)).size, rows.length, 'each row once');
    // 6 000 rows were due by the first barrier (300 ms at 20 000 rows/s); the generators made at
    // most 3 000 of them in that time. Epoch 0 holds what was made, not what was due.
    const manifest = await readManifest(out, 0);
    assert.ok(manifest !== undefined, 'epoch 0 committed its output');
    const epoch0 = manifest.files.reduce((n, f) => n + f.rows, 0);
    assert.ok(epoch0 > 0 && epoch0 < 4500, `epoch 0 holds ${epoch0} rows`);
  });

  it('gives its last epoch up when it cannot commit within the stop timeout, and the next run reads it again', async () => {
    const dir = tempDir();
    const input = join(dir, 'in');
    const out = join(dir, 'out');
    const checkpoint = join(dir, 'checkpoint');
    putRows(input, 20_000);
    // 1 ms of CPU a row behind a ring of 64 KiB (≈ 1 600 rows): the last epoch needs seconds.
    const slow = await startQuery(job, {
      params: { source: 'files', path: input, out, delayMicros: '1000', ringBytes: '65536' },
      checkpointLocation: checkpoint,
    });
    await firstCommit(slow, 30_000);
    await slow.stop({ timeoutMs: 100 });
    assert.match(slow.status.message, /^Stopped; epoch \d+ did not commit in time and was given up/);
    const fast = await startQuery(job, {
      params: { source: 'files', path: input, out, trigger: 'availableNow' },
      checkpointLocation: checkpoint,
    });
    await fast.awaitTermination();
    const rows = (await readFilesSinkOutput(out)) as { value: number }[];
    assert.equal(rows.length, 20_000);
    assert.equal(new Set(rows.map((r) => r.value)).size, 20_000, 'every row once');
  });

  it('stops at once on a second Ctrl-C under millrace run', async () => {
    const dir = tempDir();
    const input = join(dir, 'in');
    putRows(input, 20_000);
    const t = fakeIO();
    const running = main(
      [
        'run',
        fileURLToPath(job),
        ...['-p', 'source=files', '-p', `path=${input}`, '-p', `out=${join(dir, 'out')}`],
        ...['-p', 'delayMicros=1000', '-p', 'ringBytes=65536'],
        ...['--checkpoint', join(dir, 'checkpoint'), '--progress', 'json', '--stop-timeout', '10min'],
      ],
      t.io,
    );
    const deadline = Date.now() + 60_000;
    while (!t.stdout().includes('"numInputRows"')) {
      assert.ok(Date.now() < deadline, `a progress line came; stderr so far:\n${t.stderr()}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    t.interrupt();
    while (!t.stderr().includes('Ctrl-C again')) await new Promise((resolve) => setImmediate(resolve));
    t.interrupt();
    assert.equal(await running, 0, t.stderr());
    assert.match(t.stderr(), /stopping at once/);
    assert.match(t.stderr(), /was given up: the next run reads its rows again/);
  });
});
