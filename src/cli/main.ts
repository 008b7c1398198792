import { readFileSync } from 'node:fs';
import { runBench } from './bench/index.js';
import { CHECKPOINT_USAGE, checkpointCommand } from './checkpoint.js';
import { DEMO_USAGE, demoCommand } from './demo.js';
import { type CliIO, ExitCode, processIO } from './io.js';
import { RUN_USAGE, runCommand } from './run.js';

const USAGE = `Millrace — low-latency stream processing for Node.js

Usage:
  millrace run <job> [--param k=v]... [--checkpoint dir [--restart [--max-retries N]]]
               [--dead-letters dir | --dead-letters-kafka brokers/topic]
               [--late-rows dir | --late-rows-kafka brokers/topic]
               [--progress json|pretty] [--duration d] [--verbose]
  millrace demo [--rate N] [--duration 30s]
  millrace bench <scenario> [--rate N | --rates a,b,c] [--duration d] [--out dir]
  millrace checkpoint inspect <dir> [--json]
  millrace checkpoint verify <dir> [--json]
  millrace --version

Every command takes --gc single|parallel: V8's single-threaded GC, or its default with helper
threads (default: single for the small-state benchmarks, parallel otherwise), and --heap-growth P:
the old generation grows P % between full collections (default 400; 0: V8's own heuristics). See
docs/architecture.md.

An error the engine raises on purpose is printed as one line, its message and [CODE];
MILLRACE_DEBUG=1 (or run's --verbose) prints its stack too. Unexpected errors always print it.

Exit codes: 0 done, 1 query failed (checkpoint: a problem found), 2 bad usage or bad job.
`;

/** The `millrace` command line. Returns the exit code. */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  const [command, ...rest] = argv;
  const usage = command === undefined ? undefined : COMMAND_USAGE[command];
  if (usage !== undefined && asksForHelp(rest)) {
    io.out(usage);
    return ExitCode.OK;
  }
  switch (command) {
    case 'run':
      return runCommand(rest, io);
    case 'demo':
      return demoCommand(rest, io);
    case 'bench':
      return runBench(rest, io);
    case 'checkpoint':
      return checkpointCommand(rest, io);
    case 'help':
    case '--help':
    case '-h':
      io.out(USAGE);
      return ExitCode.OK;
    case '--version':
    case '-v':
      io.out(`${version()}\n`);
      return ExitCode.OK;
    case undefined:
      io.err(USAGE);
      return ExitCode.USAGE;
    default:
      io.err(`millrace: unknown command '${command}'\n\n${USAGE}`);
      return ExitCode.USAGE;
  }
}

/** The usage each command prints for `--help` (bench prints its own, per scenario). */
const COMMAND_USAGE: Readonly<Record<string, string>> = {
  run: RUN_USAGE,
  demo: DEMO_USAGE,
  checkpoint: CHECKPOINT_USAGE,
};

/** `--help` or `-h` among a command's arguments (before a `--`, after which arguments are a job's). */
function asksForHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}
