import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDirs } from '../fixtures/temp-dirs.js';

const tempDir = tempDirs('millrace-peers');

/**
 * Runs the test command on the Grafana dashboard's tests with a PATH that holds `node` and nothing
 * else: promtool is missing.
 */
function withoutPromtool(env: Record<string, string>) {
  const bin = tempDir();
  symlinkSync(process.execPath, join(bin, 'node'));
  // Not a child of this run: the runner in it reports as a run of its own.
  const { NODE_TEST_CONTEXT: _, ...outside } = process.env;
  return spawnSync(process.execPath, ['scripts/test.mjs', 'metrics/grafana-dashboard'], {
    encoding: 'utf8',
    env: { ...outside, PATH: bin, MILLRACE_TEST_REQUIRE_PEERS: '', ...env },
    timeout: 60_000,
  });
}

describe('a test whose outside program is missing', () => {
  it('is skipped with the Debian package to install, and listed at the end of the run', () => {
    const run = withoutPromtool({});
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /# needs promtool: promtool is not on the PATH \(apt-get install prometheus\)/);
    assert.match(
      run.stdout,
      /^skipped: 1\n {2}needs promtool: .*\n {4}dist\/test\/metrics\/grafana-dashboard\.test\.js: holds PromQL that promtool parses$/m,
    );
  });

  it('fails the run, naming the package, where peers are required (CI)', () => {
    const run = withoutPromtool({ MILLRACE_TEST_REQUIRE_PEERS: '1' });
    assert.notEqual(run.status, 0);
    assert.match(
      run.stdout,
      /MILLRACE_TEST_REQUIRE_PEERS=1, and this test needs promtool: .*\(apt-get install prometheus\)/,
    );
  });
});
