import { describe, it } from 'node:test';
import { CRASH_SEED, expectExactlyOnce } from './harness.js';

// `npm run crash-test` runs the same test with hundreds of kills.

describe('a job killed with SIGKILL at random moments and restarted each time', () => {
  it('writes every window of a windowed count exactly once (real-time mode, 12 kills)', async () => {
    await expectExactlyOnce({
      kills: 12,
      trigger: 'realTime',
      query: 'windows',
      seed: CRASH_SEED,
      files: 24,
      rowsPerFile: 400,
      maxRunMs: 3000,
    });
  });
});
