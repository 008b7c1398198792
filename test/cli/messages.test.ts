import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { reportError } from '../../src/cli/error-report.js';
import { main } from '../../src/cli/main.js';
import { MillraceError, parseDuration } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { fakeIO } from './fake-io.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/jobs/${name}`, import.meta.url));
const tempDir = tempDirs('millrace-cli-messages');

/** A line of a stack trace. */
const STACK_FRAME = /^\s+at /m;

/** A path this process cannot create a directory at, as root too: sysfs refuses every mkdir. */
function uncreatablePath(dir: string): string {
  if (process.getuid?.() === 0) return '/sys/millrace-checkpoint';
  const locked = join(dir, 'read-only');
  mkdirSync(locked);
  chmodSync(locked, 0o500);
  return join(locked, 'checkpoint');
}

async function run(args: string[]): Promise<{ code: number; stderr: string }> {
  const t = fakeIO();
  const code = await main(['run', ...args], t.io);
  return { code, stderr: t.stderr() };
}

describe('what millrace run says when it cannot run', () => {
  it('asks for a unit when --duration has none, and every example it offers is a valid duration', async () => {
    const { code, stderr } = await run([fixture('rate.js'), '--duration', '500']);
    assert.equal(code, 2);
    assert.match(stderr, /--duration: '500' has no unit/);
    const examples = /e\.g\. (.+)$/m.exec(stderr)?.[1];
    assert.ok(examples !== undefined, stderr);
    const offered = examples.split(/, | or /).map((e) => e.replace(/^'|'$/g, ''));
    assert.deepEqual(offered.slice(0, 3), ['500ms', '30s', '5min']);
    for (const e of offered) assert.doesNotThrow(() => parseDuration(e), e);
  });

  it('names the checkpoint location when it is a file, and exits 2', async () => {
    const file = join(tempDir(), 'ckpt');
    writeFileSync(file, 'not a directory');
    const { code, stderr } = await run([fixture('rate.js'), '--checkpoint', file]);
    assert.equal(code, 2, stderr);
    assert.match(
      stderr,
      /^millrace: checkpoint location '.*ckpt' is a file, not a directory.*\[INVALID_ARGUMENT\]$/m,
    );
    assert.doesNotMatch(stderr, STACK_FRAME);
  });

  it('names the checkpoint location and the file in its way when a parent is a file', async () => {
    const file = join(tempDir(), 'parent');
    writeFileSync(file, 'not a directory');
    const { code, stderr } = await run([fixture('rate.js'), '--checkpoint', join(file, 'ckpt')]);
    assert.equal(code, 2, stderr);
    assert.match(stderr, /checkpoint location '.*parent\/ckpt' cannot be created: '.*parent' is a file/);
    assert.match(stderr, /\[INVALID_ARGUMENT\]/);
  });

  it('names the checkpoint location it may not create, and why', async () => {
    const location = uncreatablePath(tempDir());
    const { code, stderr } = await run([fixture('rate.js'), '--checkpoint', location]);
    assert.equal(code, 2, stderr);
    assert.match(stderr, /checkpoint location '.*checkpoint' cannot be created: .*\((EACCES|EPERM|EROFS)\)/);
    assert.match(stderr, /\[INVALID_ARGUMENT\]/);
  });

  it('says that the job’s build threw, naming the module, and exits 2', async () => {
    const { code, stderr } = await run([fixture('invalid.js'), '-p', 'case=build-throws']);
    assert.equal(code, 2, stderr);
    assert.match(
      stderr,
      /^millrace: the job .*invalid\.js failed while building its query: TypeError: Cannot read properties of null \(reading 'sink'\) \[INVALID_JOB\]$/m,
    );
    assert.doesNotMatch(stderr, STACK_FRAME);
    assert.match(stderr, /MILLRACE_DEBUG=1/, 'it says how to see the stack');
  });
});

describe('what millrace run prints when a query fails', () => {
  it('prints one line for a failure it expects, without a stack', async () => {
    const { code, stderr } = await run([fixture('failing-generator.js'), '--progress', 'json']);
    assert.equal(code, 1);
    assert.match(stderr, /^millrace: the query failed: row five is cursed .*\[TASK_FAILED\]$/m);
    assert.doesNotMatch(stderr, STACK_FRAME);
  });

  it('prints the stack with --verbose, and with MILLRACE_DEBUG=1', async () => {
    const verbose = await run([fixture('failing-generator.js'), '--progress', 'json', '--verbose']);
    assert.equal(verbose.code, 1);
    assert.match(verbose.stderr, /\[TASK_FAILED\]/);
    assert.match(verbose.stderr, STACK_FRAME);
    assert.match(verbose.stderr, /row five is cursed\n\s+at .*failing-generator/, 'the job’s own frame');

    process.env.MILLRACE_DEBUG = '1';
    try {
      const debug = await run([fixture('invalid.js'), '-p', 'case=build-throws']);
      assert.equal(debug.code, 2);
      assert.match(debug.stderr, /TypeError: Cannot read properties of null[^\n]*\n\s+at .*invalid/);
    } finally {
      delete process.env.MILLRACE_DEBUG;
    }
  });
});

describe('reportError', () => {
  it('prints an engine error as one line with its code, and its stack only when asked', () => {
    const e = new MillraceError('QUERY_STOP_TIMEOUT', 'the query did not finish within 30000 ms of stop()');
    const quiet = fakeIO();
    reportError(quiet.io, 'millrace: ', e, false);
    assert.equal(
      quiet.stderr(),
      'millrace: the query did not finish within 30000 ms of stop() [QUERY_STOP_TIMEOUT]\n',
    );
    const loud = fakeIO();
    reportError(loud.io, 'millrace: ', e, true);
    assert.match(loud.stderr(), STACK_FRAME);
  });

  it('prints the stack of an error it did not expect', () => {
    for (const e of [
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      new MillraceError('TASK_FAILED', 'internal: unexpected frame DATA on an input'),
    ]) {
      const t = fakeIO();
      reportError(t.io, 'millrace: ', e, false);
      assert.match(t.stderr(), /^millrace: .*\n/);
      assert.match(t.stderr(), STACK_FRAME, e.message);
    }
  });
});
