import { describe, it } from 'node:test';
import { CRASH_SEED, expectExactlyOnce } from './harness.js';

// `npm run crash-test -- --query windows` runs the same test with hundreds of kills.

describe('a job killed with SIGKILL at random moments and restarted each time', () => {
  it('writes every window of a windowed count exactly once (real-time mode, 4 kills)', async () => {
    await expectExactlyOnce({
      kills: 4,
      trigger: 'realTime',
      query: 'windows',
      seed: CRASH_SEED,
      files: 40,
      rowsPerFile: 200,
      maxRunMs: 2000,
    });
  });
});
