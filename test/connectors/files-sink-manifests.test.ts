import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { readMetadata, writeMetadata } from '../../src/checkpoint/metadata.js';
import { verifyCheckpoint } from '../../src/checkpoint/verify.js';
import { readManifest } from '../../src/connectors/files/manifest.js';
import { readFilesSinkOutput, type StreamingQuery, startQuery } from '../../src/index.js';
import type { Reading } from '../fixtures/jobs/files-sink.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

/**
 * A files sink's output is only what its manifests list: a committed epoch whose manifest is gone
 * or damaged has lost its rows. A run checks them when it starts, and `checkpoint verify` too.
 */

const job = new URL('../fixtures/jobs/files-sink.js', import.meta.url);
const tempDir = tempDirs('millrace-manifests');

const reading = (sensor: string, value: number): Reading => ({ sensor, value, ts: 0 });

/** Where each test works: the metadata records the sink's directory, so copies go here. */
const root = tempDir();
const checkpoint = join(root, 'checkpoint');
const path = join(root, 'out');
const manifest = (epoch: number) => join(path, '_manifest', String(epoch));
const pristine = tempDir();

/** Runs `batches` one run each (real-time epochs; the stop commits each), on the checkpoint. */
async function runs(batches: Reading[][]): Promise<void> {
  let previous: StreamingQuery | undefined;
  for (const rows of batches) {
    const q = await startQuery(job, {
      params: { path },
      clock: 'manual',
      checkpointLocation: checkpoint,
      continueFrom: previous,
      options: { minBatchesToRetain: 2, workers: 1 },
    });
    q.source<Reading>('readings').addData(rows);
    await q.processAllAvailable();
    await q.stop();
    previous = q;
  }
}

/**
 * Epoch 0 wrote a row, epoch 1 none (its manifest lists no file), epoch 2 a row; retention keeps
 * the logs of epochs 1 and 2. Each test starts from a fresh copy of it.
 */
before(async () => {
  await runs([[reading('a', 1)], [], [reading('c', 3)]]);
  assert.deepEqual(readdirSync(join(path, '_manifest')).sort(), ['0', '1', '2']);
  assert.deepEqual((await readManifest(path, 1))?.files, [], 'epoch 1 wrote no rows');
  assert.deepEqual(readdirSync(join(checkpoint, 'commits')).sort(), ['1', '2'], 'epoch 0 was purged');
  cpSync(root, pristine, { recursive: true });
});

function fresh(): void {
  rmSync(root, { recursive: true });
  cpSync(pristine, root, { recursive: true });
}

/** The error a restart fails with (a run that starts is stopped: the test then fails). */
async function refusal(): Promise<Error & { code?: string }> {
  try {
    const q = await startQuery(job, { params: { path }, clock: 'manual', checkpointLocation: checkpoint });
    await q.stop();
  } catch (e) {
    return e as Error & { code?: string };
  }
  assert.fail('the restart was not refused');
}

/** A restart fails with CHECKPOINT_CORRUPT naming `file`, and verify's one problem is `file`. */
async function assertRefusedNaming(file: string): Promise<string> {
  const e = await refusal();
  assert.equal(e.code, 'CHECKPOINT_CORRUPT', e.message);
  assert.ok(e.message.includes(file), `${e.message} names ${file}`);
  const problems = (await verifyCheckpoint(checkpoint)).problems;
  assert.deepEqual(
    problems.map((p) => p.file),
    [file],
  );
  return problems[0]!.message;
}

describe("a files sink's manifests at restart", () => {
  it("refuses a restart when a committed epoch's manifest was deleted, naming it (its rows would be lost)", async () => {
    fresh();
    rmSync(manifest(2));
    assert.match(await assertRefusedNaming(manifest(2)), /^is missing: epoch 2 is committed/);
  });

  it('refuses a restart when a manifest is truncated or has a flipped byte, naming it', async () => {
    for (const damage of [
      (p: string) => writeFileSync(p, readFileSync(p).subarray(0, 10)),
      (p: string) => {
        const bytes = readFileSync(p);
        bytes[4] = bytes[4]! ^ 0x01;
        writeFileSync(p, bytes);
      },
    ]) {
      fresh();
      damage(manifest(2));
      assert.match(await assertRefusedNaming(manifest(2)), /^is corrupt: /);
    }
  });

  it('needs the manifest of an epoch that wrote no rows', async () => {
    fresh();
    rmSync(manifest(1));
    await assertRefusedNaming(manifest(1));
  });

  it('needs the manifests of epochs whose offsets and commits retention removed', async () => {
    fresh();
    rmSync(manifest(0));
    await assertRefusedNaming(manifest(0));
  });

  it('refuses a manifest after the last commit whose epoch lost its offsets: a redo over other offsets would drop rows', async () => {
    fresh();
    rmSync(join(checkpoint, 'commits', '2'));
    rmSync(join(checkpoint, 'offsets', '2'));
    assert.match(
      await assertRefusedNaming(manifest(2)),
      /^is of epoch 2, which is not committed and has no offsets file/,
    );
  });

  it('resumes on a sound output directory, every row once', async () => {
    fresh();
    assert.deepEqual((await verifyCheckpoint(checkpoint)).problems, []);
    await runs([[reading('d', 4)]]);
    const sensors = (await readFilesSinkOutput(path)).map((r) => (r as Reading).sensor).sort();
    assert.deepEqual(sensors, ['a', 'c', 'd']);
  });

  it('records the output directory in metadata an older version wrote without it, and checks the manifests there from then on', async () => {
    fresh();
    const layout = new CheckpointLayout(checkpoint);
    await writeMetadata(layout, { ...(await readMetadata(layout))!, sink: { kind: 'files' } });
    const before = await verifyCheckpoint(checkpoint);
    assert.deepEqual(before.problems, []);
    assert.deepEqual(
      before.notes.map((n) => n.file),
      ['metadata'],
    );
    assert.match(before.notes[0]!.message, /does not record the files sink's output directory/);
    await runs([[reading('d', 4)]]);
    assert.equal((await readMetadata(layout))!.sink.path, path);
    rmSync(manifest(1));
    await assertRefusedNaming(manifest(1));
  });
});
