import { inspect } from 'node:util';
import { MillraceError } from '../errors.js';
import type { CliIO } from './io.js';

/**
 * Whether the user asked to see stacks: `--verbose` (of `millrace run`), or the environment
 * variable `MILLRACE_DEBUG` set to anything but `''` or `'0'`.
 *
 * @example wantsStacks(values.verbose === true)
 */
export function wantsStacks(verbose = false, env: NodeJS.ProcessEnv = process.env): boolean {
  const debug = env.MILLRACE_DEBUG;
  return verbose || (debug !== undefined && debug !== '' && debug !== '0');
}

/**
 * How the CLI tells the user about an error. An error the engine raised on purpose — a
 * `MillraceError` such as `CHECKPOINT_IN_USE`, `QUERY_STOP_TIMEOUT`, a plan error or a task that
 * failed — is one line, `<prefix><message> [CODE]`: its message says what is wrong, and a stack
 * through the engine's code would only hide it. Its stack (and its cause's: the job's own code
 * that threw) is printed when `verbose`; without it, a line says how to ask for it when there is
 * an error behind it worth seeing. An error the engine did not expect — not a `MillraceError`, or
 * one whose message says an internal invariant broke — is printed with its stack always.
 *
 * @example reportError(io, 'millrace: the query failed: ', error, wantsStacks())
 */
export function reportError(io: CliIO, prefix: string, e: unknown, verbose: boolean): void {
  if (e instanceof MillraceError && !isInternal(e)) {
    io.err(`${prefix}${e.message} [${e.code}]\n`);
    if (verbose) io.err(`${inspect(e)}\n`);
    else if (e.cause instanceof Error) io.err('millrace: MILLRACE_DEBUG=1 prints the stack\n');
    return;
  }
  if (e instanceof MillraceError) io.err(`${prefix}${e.message} [${e.code}]\n`);
  else io.err(`${prefix}${e instanceof Error ? e.message : String(e)}\n`);
  if (e instanceof Error) io.err(`${inspect(e)}\n`);
}

/** The engine's own invariants broke (its messages say `internal:`): a bug, not a usage error. */
function isInternal(e: MillraceError): boolean {
  return /(^|: )internal: /.test(e.message);
}
