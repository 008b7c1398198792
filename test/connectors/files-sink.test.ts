import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readFilesSinkOutput, type StreamingQuery, startQuery } from '../../src/index.js';
import type { Reading } from '../fixtures/jobs/files-sink.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/files-sink.js', import.meta.url);

const tempDir = tempDirs('millrace-files');

const reading = (sensor: string, value: number, s: number): Reading => ({ sensor, value, ts: s * 1000 });
const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

async function run(
  params: Record<string, string>,
  checkpoint: string,
  data: Record<number, Reading[]>,
  previous?: StreamingQuery,
): Promise<StreamingQuery> {
  const q = await startQuery(job, {
    params,
    clock: 'manual',
    checkpointLocation: checkpoint,
    continueFrom: previous,
  });
  for (const [p, rows] of Object.entries(data)) q.source<Reading>('readings').addData(rows, Number(p));
  await q.processAllAvailable();
  await q.stop();
  return q;
}

describe('sinks.files', () => {
  for (const format of ['json', 'arrow']) {
    it(`writes one ${format} file per partition and epoch, and a manifest that readers go by`, async () => {
      const path = join(tempDir(), 'out');
      const rows = { 0: [reading('a', 1, 1), reading('b', 2, 2)], 1: [reading('c', 3, 3)] };
      await run({ path, format }, tempDir(), rows);
      assert.deepEqual(sorted(await readFilesSinkOutput(path)), sorted([...rows[0], ...rows[1]]));
      const ext = format === 'json' ? 'jsonl' : 'arrow';
      const files = readdirSync(path).sort();
      assert.equal(files.length, 3, files.join(', '));
      assert.equal(files[0], '_manifest');
      assert.match(files[1]!, new RegExp(`^part-000000-000-[0-9a-f]{8}\\.${ext}$`));
      assert.match(files[2]!, new RegExp(`^part-000000-001-[0-9a-f]{8}\\.${ext}$`));
      assert.deepEqual(readdirSync(join(path, '_manifest')), ['0']);
    });
  }

  it('keeps each row once across restarts, and ignores files no manifest lists', async () => {
    const path = join(tempDir(), 'out');
    const ckpt = tempDir();
    const first = await run({ path }, ckpt, { 0: [reading('a', 1, 1)] });
    writeFileSync(join(path, 'part-000001-000-deadbeef.jsonl'), `${JSON.stringify(reading('x', 9, 9))}\n`);
    await run({ path }, ckpt, { 1: [reading('b', 2, 2)] }, first);
    assert.deepEqual(
      sorted(await readFilesSinkOutput(path)),
      sorted([reading('a', 1, 1), reading('b', 2, 2)]),
    );
  });

  it('keeps the manifest of an epoch whose commit was interrupted, and drops the files of its redo', async () => {
    const path = join(tempDir(), 'out');
    const ckpt = tempDir();
    const first = await run({ path }, ckpt, { 0: [reading('a', 1, 1), reading('b', 2, 2)] });
    // The crash came after the manifest of epoch 0 and before its commit file.
    rmSync(join(ckpt, 'commits', '0'));
    await run({ path }, ckpt, { 1: [reading('c', 3, 3)] }, first);
    assert.deepEqual(
      sorted(await readFilesSinkOutput(path)),
      sorted([reading('a', 1, 1), reading('b', 2, 2), reading('c', 3, 3)]),
    );
    const parts = readdirSync(path).filter((f) => f.startsWith('part-000000-'));
    assert.equal(parts.length, 1, `only the first attempt's file of epoch 0 remains: ${parts.join(', ')}`);
    assert.deepEqual(readdirSync(join(ckpt, 'commits')).sort(), ['0', '1']);
  });

  it('commits windows closed by the watermark, once, across restarts (append mode)', async () => {
    const path = join(tempDir(), 'out');
    const ckpt = tempDir();
    const params = { path, case: 'windows' };
    const first = await run(params, ckpt, {
      0: [reading('a', 1, 1), reading('a', 2, 4)],
      1: [reading('b', 5, 8)],
    });
    const second = await run(params, ckpt, { 0: [reading('a', 3, 12)] }, first);
    await run(params, ckpt, { 1: [reading('b', 1, 30)] }, second);
    assert.deepEqual(
      sorted(await readFilesSinkOutput(path)),
      sorted([
        { sensor: 'a', window: { start: 0, end: 10_000 }, n: 2, total: 3 },
        { sensor: 'b', window: { start: 0, end: 10_000 }, n: 1, total: 5 },
        { sensor: 'a', window: { start: 10_000, end: 20_000 }, n: 1, total: 3 },
      ]),
    );
  });
});
