#!/usr/bin/env node
// Runs the test suite: every `*.test.js` under dist/test, with Node's own test runner. The files
// are listed here because the runner's arguments mean different things across Node lines: Node 20
// searches a directory (and takes every file under a `test` folder for a test, fixtures too), while
// Node 22 and later take glob patterns and no directory. Extra `--` arguments go to the runner
// (`node scripts/test.mjs --test-name-pattern=lease`); others choose files (below).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join('dist', 'test');
// Arguments that start with `--` go to the runner; the others pick the test files whose path under
// test/ contains one of them (`node scripts/test.mjs semantics/backlog kafka/group`).
const args = process.argv.slice(2);
const flags = args.filter((a) => a.startsWith('--'));
const patterns = args.filter((a) => !a.startsWith('--'));
const files = readdirSync(root, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.test.js'))
  .filter((f) => patterns.length === 0 || patterns.some((p) => f.includes(p)))
  .sort()
  .map((f) => join(root, f));
if (files.length === 0) {
  console.error(`no test file under ${root} matches ${patterns.join(', ')}`);
  process.exit(1);
}
// The spec reporter (the default of Node 22 and later; Node 20's is TAP), and at the end the
// slowest files and the skipped tests with why (scripts/run-summary.mjs).
const reporters = [
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  `--test-reporter=${new URL('./run-summary.mjs', import.meta.url).href}`,
  '--test-reporter-destination=stdout',
];
const run = spawnSync(
  process.execPath,
  ['--test', '--test-timeout=120000', ...reporters, ...flags, ...files],
  { stdio: 'inherit' },
);
process.exit(run.status ?? 1);
