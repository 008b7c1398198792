import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readFilesSinkOutput, type StreamingQuery, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/generated-async-sink.js', import.meta.url);
const tempDir = tempDirs('millrace-async-sink');

/** Resolves once `epochs` epochs have committed; rejects after `timeoutMs` (the hang this guards against). */
function committed(q: StreamingQuery, epochs: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      q.off('epochCommitted', onCommit);
      reject(new Error(`only ${count} of ${epochs} epochs committed within ${timeoutMs} ms`));
    }, timeoutMs);
    let count = 0;
    const onCommit = () => {
      if (++count < epochs) return;
      clearTimeout(timer);
      q.off('epochCommitted', onCommit);
      resolve();
    };
    q.on('epochCommitted', onCommit);
  });
}

// Regression: with a generated source, a task waiting for its sink's promise kept its host from
// parking (the rows it owed looked due) and from yielding, so the promise's continuation never
// ran: a rate source into a files sink committed no epoch, a foreach sink stalled after a few rows.
describe('a generated source into a sink whose steps wait on promises', () => {
  // Every pair at 1 000 rows/s (the bug needed about that), and the fastest pairs at 20 000.
  const cases = [
    ...['rate', 'generator'].flatMap((source) =>
      ['files', 'foreach', 'foreachBatch'].map((sink) => [source, sink, 1000] as const),
    ),
    ['rate', 'foreach', 20_000],
    ['generator', 'files', 20_000],
  ] as const;
  for (const [source, sink, rowsPerSecond] of cases) {
    it(`${source} → ${sink} at ${rowsPerSecond} rows/s commits epoch after epoch, and stops promptly`, async () => {
      const dir = tempDir();
      const path = join(dir, 'out');
      const q = await startQuery(job, {
        params: { source, sink, path, rowsPerSecond: String(rowsPerSecond) },
        checkpointLocation: join(dir, 'checkpoint'),
      });
      let sent = 0;
      q.on('progress', (p) => {
        sent += p.sink.numOutputRows;
      });
      try {
        await committed(q, 3, 20_000);
      } finally {
        await q.stop({ timeoutMs: 10_000 });
      }
      assert.ok(sent > 0, 'rows reached the sink');
      if (sink === 'files') {
        const rows = await readFilesSinkOutput(path);
        assert.ok(rows.length > 0, 'committed rows are in the output');
        // Every committed row once: values are distinct per partition and offset.
        assert.equal(new Set(rows.map((r) => JSON.stringify(r))).size, rows.length);
      }
    });
  }
});
