import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CRASH_SEED } from './harness.js';
import { kafkaCrashTest } from './kafka-harness.js';

// `npm run crash-test -- --query kafka` runs the same test with hundreds of kills.

describe('a Kafka → query → Kafka job killed with SIGKILL at random moments and restarted each time', () => {
  it('a read_committed reader sees every update of a windowed count exactly once (realTime, shuffle, 4 kills)', async () => {
    const lines: string[] = [];
    const result = await kafkaCrashTest({
      kills: 4,
      trigger: 'realTime',
      query: 'count',
      seed: CRASH_SEED + 6,
      rowsPerRun: 200,
      maxRunMs: 3000,
      log: (l) => lines.push(l),
    });
    const context = lines.join('\n');
    assert.deepEqual(result.errors, [], context);
    assert.deepEqual(result.missing.slice(0, 10), [], `updates lost (${result.missing.length}); ${context}`);
    assert.deepEqual(
      result.duplicated.slice(0, 10),
      [],
      `updates written twice (${result.duplicated.length}); ${context}`,
    );
    assert.deepEqual(result.unexpected, [], context);
  });

  for (const [trigger, kills] of [
    ['realTime', 4],
    ['microBatch', 4],
  ] as const) {
    it(`a read_committed reader sees every output row exactly once (${trigger}, ${kills} kills)`, async () => {
      const lines: string[] = [];
      const result = await kafkaCrashTest({
        kills,
        trigger,
        seed: CRASH_SEED + (trigger === 'realTime' ? 4 : 5),
        rowsPerRun: 100,
        maxRunMs: 2000,
        log: (l) => lines.push(l),
      });
      const context = lines.join('\n');
      assert.deepEqual(result.errors, [], context);
      assert.deepEqual(result.missing.slice(0, 10), [], `rows lost (${result.missing.length}); ${context}`);
      assert.deepEqual(
        result.duplicated.slice(0, 10),
        [],
        `rows written twice (${result.duplicated.length}); ${context}`,
      );
      assert.deepEqual(result.unexpected, [], context);
      assert.equal(result.outputRows, result.expectedRows);
    });
  }
});
