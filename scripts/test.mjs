#!/usr/bin/env node
// Runs the test suite: every `*.test.js` under dist/test, with Node's own test runner. The files
// are listed here because the runner's arguments mean different things across Node lines: Node 20
// searches a directory (and takes every file under a `test` folder for a test, fixtures too), while
// Node 22 and later take glob patterns and no directory. Extra arguments go to the runner
// (`node scripts/test.mjs --test-name-pattern=lease`).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join('dist', 'test');
const files = readdirSync(root, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.test.js'))
  .sort()
  .map((f) => join(root, f));
const run = spawnSync(
  process.execPath,
  ['--test', '--test-timeout=120000', ...process.argv.slice(2), ...files],
  { stdio: 'inherit' },
);
process.exit(run.status ?? 1);
