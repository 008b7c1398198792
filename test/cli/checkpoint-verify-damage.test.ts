import assert from 'node:assert/strict';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { readMetadata } from '../../src/checkpoint/metadata.js';
import { verifyCheckpoint } from '../../src/checkpoint/verify.js';
import { main } from '../../src/cli/main.js';
import { startQuery } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/crash.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { fakeIO } from './fake-io.js';

/**
 * `millrace checkpoint verify` on checkpoints that lost a file a restart needs — it must report
 * each as a problem (exit 1) — or hold one a restart takes over (an unreadable lock: exit 0).
 */

const job = new URL('../fixtures/jobs/crash.js', import.meta.url);
const tempDir = tempDirs('millrace-verify-damage');

async function cli(...args: string[]) {
  const t = fakeIO();
  const code = await main(args, t.io);
  return { code, stdout: t.stdout(), stderr: t.stderr() };
}

const events = (from: number, n: number): Event[] =>
  Array.from({ length: n }, (_, i) => ({ k: `k${i % 3}`, ts: (from + i) * 250, v: i }));

/**
 * Files source → windowed count (2 state partitions) → files sink, run twice with a new input
 * file each time: the source's log has entries 0 and 1. Copies keep the input and output paths
 * (the metadata records the sink's), so each test damages a copy of the checkpoint only.
 */
let good: string;
let operatorDir: string;
before(async () => {
  const root = tempDir();
  const [input, output] = [join(root, 'in'), join(root, 'out')];
  good = join(root, 'checkpoint');
  mkdirSync(input);
  for (const n of [0, 1]) {
    writeFileSync(
      join(input, `in-${n}.jsonl`),
      events(n * 8, 8)
        .map((e) => `${JSON.stringify(e)}\n`)
        .join(''),
    );
    const q = await startQuery(job, {
      params: { input, output, trigger: 'availableNow' },
      checkpointLocation: good,
      clock: 'manual',
      options: { workers: 1 },
    });
    await q.awaitTermination(60_000);
  }
  assert.deepEqual((await verifyCheckpoint(good)).problems, []);
  const metadata = await readMetadata(new CheckpointLayout(good));
  operatorDir = `state/${metadata!.stateful[0]!.operatorId}`;
});

function copyOf(dir: string): string {
  const copy = tempDir();
  cpSync(dir, copy, { recursive: true });
  return copy;
}

async function problemFiles(dir: string): Promise<string[]> {
  return (await verifyCheckpoint(dir)).problems.map((p) => p.file);
}

describe('millrace checkpoint verify on a damaged checkpoint', () => {
  it("reports a missing entry of a files source's log, first or last", async () => {
    for (const entry of ['0', '1']) {
      const dir = copyOf(good);
      rmSync(join(dir, 'sources', '0', 'files', entry));
      assert.deepEqual(await problemFiles(dir), [`sources/0/files/${entry}`]);
    }
  });

  it('reports a missing state partition directory', async () => {
    const dir = copyOf(good);
    rmSync(join(dir, operatorDir, '1'), { recursive: true });
    assert.deepEqual(await problemFiles(dir), [`${operatorDir}/1`]);
  });

  it('reports a missing sources directory', async () => {
    const dir = copyOf(good);
    rmSync(join(dir, 'sources'), { recursive: true });
    assert.deepEqual(await problemFiles(dir), ['sources/0/files/0']);
  });

  it('reports a checkpoint whose metadata was deleted as damaged (exit 1), not as "not a checkpoint"', async () => {
    const dir = copyOf(good);
    rmSync(join(dir, 'metadata'));
    const r = await cli('checkpoint', 'verify', dir);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^metadata is missing, and the checkpoint holds what a query wrote \(offsets\/0, /m,
    );
    assert.deepEqual(await problemFiles(dir), ['metadata']);
    const inspect = await cli('checkpoint', 'inspect', dir);
    assert.equal(inspect.code, 1, inspect.stdout + inspect.stderr);
    assert.match(inspect.stderr, /metadata is missing/);
  });

  it('mentions an unreadable lock without failing (exit 0): the next run takes it over', async () => {
    const dir = copyOf(good);
    writeFileSync(join(dir, 'lock'), 'garbage');
    const r = await cli('checkpoint', 'verify', dir);
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /^note: lock /m);
    assert.match(r.stdout, /is sound/);
    const json = JSON.parse((await cli('checkpoint', 'verify', dir, '--json')).stdout);
    assert.equal(json.ok, true);
    assert.deepEqual(
      json.notes.map((n: { file: string }) => n.file),
      ['lock'],
    );
  });
});
