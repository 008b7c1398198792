import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startQuery } from '../../src/index.js';

const job = new URL('../fixtures/jobs/widen.js', import.meta.url);

describe('rows larger than half a ring', () => {
  it('are refused by addData with RECORD_TOO_LARGE, keeping the rows added before them', async () => {
    const q = await startQuery(job);
    try {
      assert.throws(
        () => q.source('in').addData([{ size: 1 }, { size: 2, pad: 'y'.repeat(5000) } as never]),
        {
          code: 'RECORD_TOO_LARGE',
          message: /row 1 of source 'in' \(partition 0\) was not added: .*ringCapacityBytes/,
        },
      );
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [{ text: 'x' }]);
    } finally {
      await q.stop();
    }
  });

  it('fail the query with RECORD_TOO_LARGE and where the row was made', async () => {
    const q = await startQuery(job);
    q.source('in').addData([{ size: 10 }, { size: 3000 }]);
    await assert.rejects(q.awaitTermination(), (e: Error & { code?: string; partition?: number }) => {
      assert.equal(e.code, 'RECORD_TOO_LARGE');
      assert.match(e.message, /does not fit a ring of 4096 bytes.*raise the query option ringCapacityBytes/);
      assert.match(e.message, /stage 0, partition 0/);
      return true;
    });
  });
});
