import { describe, it } from 'node:test';
import { CRASH_SEED, expectExactlyOnce } from './harness.js';

// `npm run crash-test -- --query rows` (or `generated`) runs the same test with hundreds of kills.

describe('a job killed with SIGKILL at random moments and restarted each time', () => {
  it('writes every row of a stateless query exactly once (real-time mode, 4 kills)', async () => {
    await expectExactlyOnce({
      kills: 4,
      trigger: 'realTime',
      query: 'rows',
      seed: CRASH_SEED + 2,
      files: 40,
      rowsPerFile: 150,
      maxRunMs: 2000,
    });
  });

  it('writes every row of a query with an Arrow UDF exactly once (real-time mode, 4 kills)', async () => {
    await expectExactlyOnce({
      kills: 4,
      trigger: 'realTime',
      query: 'arrow',
      seed: CRASH_SEED + 8,
      files: 30,
      rowsPerFile: 120,
      maxRunMs: 2000,
    });
  });

  it('writes every row of a query with an Arrow UDF on a UDF thread exactly once (real-time mode, 3 kills)', async () => {
    await expectExactlyOnce({
      kills: 3,
      trigger: 'realTime',
      query: 'arrow',
      isolate: true,
      seed: CRASH_SEED + 9,
      files: 24,
      rowsPerFile: 120,
      maxRunMs: 2000,
    });
  });

  // The shape that hung: a generated source into a sink whose steps wait on the file system. A
  // run that commits nothing for 30 s fails the test.
  it('writes every row of a rate source exactly once (real-time mode, 4 kills)', async () => {
    await expectExactlyOnce({
      kills: 4,
      trigger: 'realTime',
      query: 'generated',
      seed: CRASH_SEED + 7,
      files: 0,
      rowsPerFile: 0,
      maxRunMs: 2000,
    });
  });
});
