import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MillraceError, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/rate.js', import.meta.url);
const tempDir = tempDirs('millrace-checkpoint-location');

function workerResources(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'MessagePort' || r === 'Worker').length;
}

describe('a checkpoint location that cannot be a checkpoint', () => {
  it('is refused with INVALID_ARGUMENT naming it when it is a file, which is left as it was', async () => {
    const file = join(tempDir(), 'ckpt');
    writeFileSync(file, 'notes');
    const before = workerResources();
    await assert.rejects(startQuery(job, { checkpointLocation: file, clock: 'manual' }), (e: unknown) => {
      assert.ok(e instanceof MillraceError);
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.equal(
        e.message,
        `checkpoint location '${file}' is a file, not a directory: give the checkpoint ` +
          '(--checkpoint, checkpointLocation) a directory, new or existing',
      );
      return true;
    });
    assert.equal(readFileSync(file, 'utf8'), 'notes');
    assert.equal(workerResources(), before, 'no thread was started');
  });

  it('is refused with INVALID_ARGUMENT naming the file in its way when a parent is a file', async () => {
    const parent = join(tempDir(), 'parent');
    writeFileSync(parent, 'notes');
    const location = join(parent, 'deeper', 'ckpt');
    await assert.rejects(startQuery(job, { checkpointLocation: location, clock: 'manual' }), {
      code: 'INVALID_ARGUMENT',
      message: `checkpoint location '${location}' cannot be created: '${parent}' is a file, not a directory`,
    });
  });
});
