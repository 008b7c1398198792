import type { CliIO } from '../io.js';
import { ExitCode } from '../io.js';

/** `millrace bench <scenario> ...` */
export async function runBench(args: string[], io: CliIO): Promise<number> {
  io.err(`millrace bench: no scenario available yet (${args.join(' ')})\n`);
  return ExitCode.USAGE;
}
