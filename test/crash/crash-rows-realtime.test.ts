import { describe, it } from 'node:test';
import { CRASH_SEED, expectExactlyOnce } from './harness.js';

// `npm run crash-test` runs the same test with hundreds of kills.

describe('a job killed with SIGKILL at random moments and restarted each time', () => {
  it('writes every row of a stateless query exactly once (real-time mode, 6 kills)', async () => {
    await expectExactlyOnce({
      kills: 6,
      trigger: 'realTime',
      query: 'rows',
      seed: CRASH_SEED + 2,
      files: 12,
      rowsPerFile: 300,
      maxRunMs: 3000,
    });
  });
});
