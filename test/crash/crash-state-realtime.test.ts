import { describe, it } from 'node:test';
import { CRASH_SEED, expectExactlyOnce } from './harness.js';

// `npm run crash-test -- --query state` runs the same test with hundreds of kills.

describe('a transformWithState job killed with SIGKILL at random moments and restarted each time', () => {
  it("writes every key's running total exactly once (real-time mode, 4 kills)", async () => {
    await expectExactlyOnce({
      kills: 4,
      trigger: 'realTime',
      query: 'state',
      seed: CRASH_SEED + 3,
      files: 12,
      rowsPerFile: 200,
      maxRunMs: 2000,
    });
  });
});
