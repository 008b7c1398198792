#!/usr/bin/env node
// Runs the test suite: every `*.test.js` under dist/test, with Node's own test runner. The files
// are listed here because the runner's arguments mean different things across Node lines: Node 20
// searches a directory (and takes every file under a `test` folder for a test, fixtures too), while
// Node 22 and later take glob patterns and no directory. Extra `--` arguments go to the runner
// (`node scripts/test.mjs --test-name-pattern=lease`); others choose files (below).
//
// Most files wait on something (a child process, a broker, a timer) part of their time, so they
// run two at a time. A few run with nothing beside them, after the others: see ALONE.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatSummary } from './run-summary.mjs';

/**
 * Files whose processes must keep deadlines two busy cores miss: members of a group that heartbeat
 * within a 3 s session while they move state through a broker, under test deadlines. Beside
 * another file they time out; alone they pass in a minute or two (kafka/group-query's members are
 * queries of one process, and pass beside another file).
 */
const ALONE = ['kafka/group-run.', 'kafka/group-keyed.', 'kafka/group-watermarks.'];
/** Files run at once in the first phase, unless a `--test-concurrency` flag says otherwise. */
const CONCURRENCY = 2;

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
  .sort();
if (files.length === 0) {
  console.error(`no test file under ${root} matches ${patterns.join(', ')}`);
  process.exit(1);
}
const alone = files.filter((f) => ALONE.some((a) => f.includes(a)));
const together = files.filter((f) => !alone.includes(f));

// The spec reporter (the default of Node 22 and later; Node 20's is TAP), and the summary reporter
// (scripts/run-summary.mjs), which writes what it saw of each phase to a file: the slowest files
// and the skipped tests with why, of both phases, are printed once at the end.
const summaries = mkdtempSync(join(tmpdir(), 'millrace-test-summary-'));
let failed = false;
try {
  const phases = [
    {
      files: together,
      concurrency: flags.some((f) => f.startsWith('--test-concurrency'))
        ? []
        : [`--test-concurrency=${CONCURRENCY}`],
    },
    { files: alone, concurrency: ['--test-concurrency=1'] },
  ];
  for (const [i, phase] of phases.entries()) {
    if (phase.files.length === 0) continue;
    const summary = join(summaries, `${i}.json`);
    const run = spawnSync(
      process.execPath,
      [
        '--test',
        '--test-timeout=120000',
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${new URL('./run-summary.mjs', import.meta.url).href}`,
        '--test-reporter-destination=stdout',
        ...phase.concurrency,
        ...flags,
        ...phase.files.map((f) => join(root, f)),
      ],
      { stdio: 'inherit', env: { ...process.env, MILLRACE_TEST_SUMMARY: summary } },
    );
    if (run.status !== 0) failed = true;
  }
  const seen = readdirSync(summaries).map((f) => JSON.parse(readFileSync(join(summaries, f), 'utf8')));
  process.stdout.write(
    formatSummary(
      seen.flatMap((s) => s.files),
      seen.flatMap((s) => s.skipped),
    ),
  );
} finally {
  rmSync(summaries, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
