import type { CliIO } from '../../src/cli/io.js';

/** A CliIO that records what a command prints, and lets the test press Ctrl-C. */
export function fakeIO(isTTY = false) {
  const out: string[] = [];
  const err: string[] = [];
  const handlers = new Set<() => void>();
  const io: CliIO = {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    isTTY,
    onInterrupt(h) {
      handlers.add(h);
      return () => handlers.delete(h);
    },
  };
  return {
    io,
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    interrupt: () => {
      for (const h of [...handlers]) h();
    },
  };
}
