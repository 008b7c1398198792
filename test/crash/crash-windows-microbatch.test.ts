import { describe, it } from 'node:test';
import { CRASH_SEED, expectExactlyOnce } from './harness.js';

// `npm run crash-test` runs the same test with hundreds of kills.

describe('a job killed with SIGKILL at random moments and restarted each time', () => {
  it('writes every window exactly once (micro-batch mode, 4 kills)', async () => {
    await expectExactlyOnce({
      kills: 4,
      trigger: 'processingTime',
      query: 'windows',
      seed: CRASH_SEED + 1,
      files: 12,
      rowsPerFile: 400,
      maxRunMs: 3000,
    });
  });
});
