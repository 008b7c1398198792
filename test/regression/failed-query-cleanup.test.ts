import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startQuery } from '../../src/index.js';
import { testStream } from '../../src/testing/index.js';

const failing = new URL('../fixtures/jobs/failing.js', import.meta.url);
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('a query that failed on its own', () => {
  it('is stopped only once its threads are gone and its checkpoint lock is released', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'millrace-failed-cleanup-'));
    dirs.push(dir);
    const q = await startQuery(failing, { clock: 'manual', checkpointLocation: dir });
    q.source('in').addData([{ id: 1, amount: 13 }]);
    await assert.rejects(q.processAllAvailable(), /unlucky/);
    // The failure is known; its shutdown may still be under way. stop() waits for all of it.
    await q.stop();
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.includes('lock')),
      [],
      'no lock or claim file is left behind',
    );
    assert.equal(q.status.isActive, false);
  });

  it('leaves testStream nothing to race when it removes its temporary checkpoint', async () => {
    // Before, the run's end stopped nothing after expectFailure, and the lease's release wrote its
    // claim into a directory being removed (ENOTEMPTY in about 1 run of 3).
    for (let i = 0; i < 10; i++) {
      await testStream(failing)
        .addData('in', [{ id: i, amount: 13 }])
        .expectFailure({ code: 'TASK_FAILED', message: /unlucky/ })
        .run();
    }
    const left = readdirSync(tmpdir()).filter(
      (f) => f.startsWith('millrace-test-stream-') && existsSync(join(tmpdir(), f, '.lock')),
    );
    assert.deepEqual(left, []);
  });
});
