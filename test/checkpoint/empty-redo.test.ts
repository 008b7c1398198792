import assert from 'node:assert/strict';
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readFilesSinkOutput, startQuery } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/crash.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/crash.js', import.meta.url);
const tempDir = tempDirs('millrace-empty-redo');

const events = (from: number, n: number): Event[] =>
  Array.from({ length: n }, (_, i) => ({ k: `k${i % 3}`, ts: (from + i) * 100, v: 1 }));
const writeEvents = (dir: string, name: string, rows: Event[]) =>
  writeFileSync(join(dir, name), rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
const lastEpoch = (dir: string) => Math.max(...readdirSync(dir).map(Number));

async function runAvailableNow(input: string, output: string, checkpoint: string): Promise<void> {
  const q = await startQuery(job, {
    params: { input, output, trigger: 'availableNow' },
    checkpointLocation: checkpoint,
  });
  await q.awaitTermination(60_000);
}

describe('a logged epoch that brought no rows', () => {
  it('is redone as an empty batch, and the batches after it run', async () => {
    const [input, output, checkpoint] = [tempDir(), tempDir(), tempDir()];
    writeEvents(input, 'a.jsonl', events(0, 30));
    await runAvailableNow(input, output, checkpoint);
    // A real-time run killed after logging an epoch with no new rows leaves offsets equal to the
    // committed ones, and no commit.
    const offsets = join(checkpoint, 'offsets');
    const committed = lastEpoch(join(checkpoint, 'commits'));
    copyFileSync(join(offsets, String(committed)), join(offsets, String(committed + 1)));
    writeEvents(input, 'b.jsonl', [...events(30, 30), { k: 'end', ts: 3_600_000, v: 0 }]);
    await runAvailableNow(input, output, checkpoint);
    const windows = (await readFilesSinkOutput(output)) as { window: { start: number }; n: number }[];
    const starts = [...new Set(windows.map((w) => w.window.start))].sort((a, b) => a - b);
    assert.deepEqual(starts, [0, 1000, 2000, 3000, 4000, 5000], 'the windows of b.jsonl were written too');
    assert.equal(
      windows.reduce((n, w) => n + w.n, 0),
      60,
    );
    assert.ok(lastEpoch(join(checkpoint, 'commits')) > committed + 1);
  });
});
