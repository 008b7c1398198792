import type { CliIO } from '../../../src/cli/io.js';

/** A CliIO that keeps what a command writes. */
export function fakeIO(): CliIO & { stdout: () => string; stderr: () => string } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out: (t) => void out.push(t),
    err: (t) => void err.push(t),
    isTTY: false,
    onInterrupt: () => () => {},
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}
