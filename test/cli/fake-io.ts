import type { CliIO } from '../../src/cli/io.js';

/** A CliIO that records what a command prints, and lets the test press Ctrl-C. */
export function fakeIO(isTTY = false) {
  const out: string[] = [];
  const err: string[] = [];
  const handlers = new Set<() => void>();
  const waiters = new Set<() => void>();
  const io: CliIO = {
    out: (t) => {
      out.push(t);
      for (const w of [...waiters]) w();
    },
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
    /** Resolves with the match once what the command printed on stdout matches `re`. */
    printed: (re: RegExp) =>
      new Promise<RegExpExecArray>((resolve) => {
        const check = () => {
          const m = re.exec(out.join(''));
          if (m === null) return;
          waiters.delete(check);
          resolve(m);
        };
        waiters.add(check);
        check();
      }),
    interrupt: () => {
      for (const h of [...handlers]) h();
    },
  };
}
