import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startQuery } from '../../src/index.js';
import type { Click, Impression } from '../fixtures/jobs/joins.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/joins.js', import.meta.url);
const tempDir = tempDirs('millrace-join-recovery');

const imp = (k: string, s: number, lv: number): Impression => ({ k, lt: s * 1000, lv });
const click = (k: string, s: number, rv: number): Click => ({ k, rt: s * 1000, rv });

describe('stream–stream join recovery', () => {
  for (const trigger of ['realTime', 'microBatch']) {
    it(`resumes with the buffered rows of both sides (${trigger})`, async () => {
      const dir = tempDir();
      const params = { type: 'leftOuter', trigger };
      const first = await startQuery(job, { params, clock: 'manual', checkpointLocation: dir });
      try {
        first.source<Impression>('impressions').addData([imp('a', 10, 1), imp('u', 10, 2)]);
        first.source<Click>('clicks').addData([click('b', 10, 3)]);
        await first.processAllAvailable();
      } finally {
        await first.stop();
      }
      assert.deepEqual(first.sink('out').rows(), []);

      const second = await startQuery(job, { params, clock: 'manual', checkpointLocation: dir });
      try {
        second.source<Click>('clicks').addData([click('a', 11, 4)]);
        await second.processAllAvailable();
        second.source<Impression>('impressions').addData([imp('b', 9.5, 5), imp('end', 100, 6)]);
        second.source<Click>('clicks').addData([click('end', 100, 7)]);
        await second.processAllAvailable();
        const rows = second
          .sink<Record<string, unknown>>('out')
          .rows()
          .map((r) => JSON.stringify(r))
          .sort();
        const expected = [
          { k: 'a', lt: 10_000, lv: 1, rt: 11_000, rv: 4 }, // a restored left row meets a new click
          { k: 'b', lt: 9_500, lv: 5, rt: 10_000, rv: 3 }, // a restored click meets a new left row
          { k: 'u', lt: 10_000, lv: 2 }, // a restored unmatched left row, out once it cannot match
          { k: 'end', lt: 100_000, lv: 6, rt: 100_000, rv: 7 },
        ];
        assert.deepEqual(rows, expected.map((r) => JSON.stringify(r)).sort());
      } finally {
        await second.stop();
      }
    });
  }

  it('refuses to resume after the join type or keys changed', async () => {
    const dir = tempDir();
    const q = await startQuery(job, { params: { type: 'inner' }, clock: 'manual', checkpointLocation: dir });
    q.source<Impression>('impressions').addData([imp('a', 10, 1)]);
    await q.processAllAvailable();
    await q.stop();
    await assert.rejects(
      startQuery(job, { params: { type: 'rightOuter' }, clock: 'manual', checkpointLocation: dir }),
      { code: 'CHECKPOINT_INCOMPATIBLE_CHANGE', message: /join type changed from inner to rightOuter/ },
    );
    await assert.rejects(
      startQuery(job, { params: { upper: 5000 }, clock: 'manual', checkpointLocation: dir }),
      { code: 'CHECKPOINT_INCOMPATIBLE_CHANGE', message: /time-range condition changed/ },
    );
  });
});
