import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { fakeIO } from './fake-io.js';

const flaky = fileURLToPath(new URL('../fixtures/jobs/flaky.js', import.meta.url));

const tempDir = tempDirs('millrace-cli-restart');

/**
 * `millrace run` of the flaky job on generated rows: row 5 fails the first `failures` attempts
 * that reach it. `backoffMs` is the job's own restart policy (short, so the test does not wait
 * the default second), which `--restart` keeps.
 */
function runArgs(dir: string, failures: number, ...extra: string[]): string[] {
  return [
    'run',
    flaky,
    '-p',
    'source=generator',
    '-p',
    `counter=${join(dir, 'failures')}`,
    '-p',
    `failures=${failures}`,
    '-p',
    'backoffMs=20',
    '--progress',
    'json',
    ...extra,
  ];
}

describe('millrace run --restart', () => {
  it('restarts a failed query from its checkpoint, printing a line per restart, and goes on running', async () => {
    const dir = tempDir();
    const t = fakeIO();
    const running = main(runArgs(dir, 2, '--checkpoint', join(dir, 'checkpoint'), '--restart'), t.io);
    // Ctrl-C once the third attempt runs (explicit coordination: the CLI says so on stderr).
    const deadline = Date.now() + 60_000;
    while (!t.stderr().includes('attempt 3 running')) {
      assert.ok(Date.now() < deadline, `the third attempt started; stderr so far:\n${t.stderr()}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    t.interrupt();
    assert.equal(await running, 0, t.stderr());
    const lines = t.stderr().split('\n');
    const restarts = lines.filter((l) => l.includes('restarting from the checkpoint'));
    assert.equal(restarts.length, 2, t.stderr());
    assert.match(
      restarts[0]!,
      /^millrace: attempt 1 failed: flaky failure 1 on row 5 .*\[TASK_FAILED\]; restarting from the checkpoint in 20 ms \(attempt 2, retries left: 2\)$/,
    );
    assert.match(
      restarts[1]!,
      /attempt 2 failed: flaky failure 2 on row 5 .*\(attempt 3, retries left: 1\)$/,
    );
    assert.match(t.stderr(), /millrace: attempt 2 running \(run [0-9a-f-]{36}\)/);
    assert.equal(readFileSync(join(dir, 'failures'), 'utf8'), '2');
    assert.ok(
      readdirSync(join(dir, 'checkpoint', 'commits')).length >= 1,
      'the last attempt committed at the stop',
    );
  });

  it('gives up after --max-retries and exits 1 with the last error', async () => {
    const dir = tempDir();
    const t = fakeIO();
    const code = await main(
      runArgs(dir, 5, '--checkpoint', join(dir, 'checkpoint'), '--restart', '--max-retries', '1'),
      t.io,
    );
    assert.equal(code, 1, t.stderr());
    assert.equal(t.stderr().match(/restarting from the checkpoint/g)?.length, 1, t.stderr());
    assert.match(t.stderr(), /the query failed after 2 attempts: flaky failure 2 on row 5 .*\[TASK_FAILED\]/);
    assert.equal(readFileSync(join(dir, 'failures'), 'utf8'), '2');
  });

  it('is a usage error (exit 2) without a checkpoint, or with a --max-retries it cannot read', async () => {
    const dir = tempDir();
    const job = ['run', flaky, '-p', `counter=${join(dir, 'failures')}`];
    for (const args of [
      [...job, '--restart'],
      [...job, '--max-retries', '2'],
      [...job, '--checkpoint', join(dir, 'checkpoint'), '--max-retries', 'many'],
    ]) {
      const t = fakeIO();
      assert.equal(await main(args, t.io), 2, args.join(' '));
      assert.match(t.stderr(), /checkpoint|--max-retries/);
    }
    assert.throws(() => readdirSync(join(dir, 'checkpoint')), { code: 'ENOENT' }, 'nothing was started');
  });
});
