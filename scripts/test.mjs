#!/usr/bin/env node
// Runs the test suite: every `*.test.js` under dist/test, with Node's own test runner. The files
// are listed here because the runner's arguments mean different things across Node lines: Node 20
// searches a directory (and takes every file under a `test` folder for a test, fixtures too), while
// Node 22 and later take glob patterns and no directory. Extra `--` arguments go to the runner
// (`node scripts/test.mjs --test-name-pattern=lease`); others choose files (below).
//
// Most files wait on something (a child process, a broker, a timer) part of their time, so they
// run two at a time. A few run after them with nothing beside them (ALONE), but for a file that
// only waits (QUIET).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatSummary } from './run-summary.mjs';

/**
 * Files whose processes must keep deadlines two busy cores miss: members of a group that heartbeat
 * within a 3 s session while they move state through a broker, under test deadlines. Beside
 * another busy file they time out; run one by one, with only a QUIET file beside them, they pass
 * in a minute or two (kafka/group-query's members are
 * queries of one process, and pass beside another file).
 */
const ALONE = ['kafka/group-run.', 'kafka/group-keyed.', 'kafka/group-watermarks.'];
/**
 * Files that spend their time waiting (kafka/group-membership: 40 s of session timeouts for 3 s of
 * CPU): they run beside the ALONE files, whose CPU they leave alone.
 */
const QUIET = ['kafka/group-membership.'];
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
const quiet = files.filter((f) => QUIET.some((a) => f.includes(a)));
const together = files.filter((f) => !alone.includes(f) && !quiet.includes(f));

// The spec reporter (the default of Node 22 and later; Node 20's is TAP), and the summary reporter
// (scripts/run-summary.mjs), which writes what it saw of each phase to a file: the slowest files
// and the skipped tests with why, of both phases, are printed once at the end.
const summaries = mkdtempSync(join(tmpdir(), 'millrace-test-summary-'));
const ownConcurrency = flags.some((f) => f.startsWith('--test-concurrency'));
/** Runs `phase` files with the runner; resolves true when they all passed. */
async function run(phase, concurrency, output = 'inherit') {
  if (phase.length === 0) return { passed: true, text: '' };
  const child = spawn(
    process.execPath,
    [
      '--test',
      '--test-timeout=120000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${new URL('./run-summary.mjs', import.meta.url).href}`,
      '--test-reporter-destination=stdout',
      ...(ownConcurrency ? [] : [`--test-concurrency=${concurrency}`]),
      ...flags,
      ...phase.map((f) => join(root, f)),
    ],
    {
      stdio: ['ignore', output, 'inherit'],
      env: {
        ...process.env,
        MILLRACE_TEST_SUMMARY: join(summaries, `${phase[0].replaceAll('/', '_')}.json`),
      },
    },
  );
  let text = '';
  child.stdout?.on('data', (d) => {
    text += d;
  });
  const [code] = await once(child, 'exit');
  return { passed: code === 0, text };
}
let passed = true;
try {
  passed = (await run(together, CONCURRENCY)).passed;
  // The quiet files' report is printed after the alone files', not interleaved with it.
  const [aloneRun, quietRun] = await Promise.all([run(alone, 1), run(quiet, 1, 'pipe')]);
  process.stdout.write(quietRun.text);
  passed &&= aloneRun.passed && quietRun.passed;
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
process.exit(passed ? 0 : 1);
