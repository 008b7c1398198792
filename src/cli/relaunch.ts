import { spawn } from 'node:child_process';

/**
 * The CLI's process runs with V8's `--single-threaded-gc`: each thread collects its own garbage,
 * and V8 starts no helper threads to mark, sweep or scavenge beside it. The engine's worker
 * threads spin while they wait for rows and so hold the CPUs (two of them on a 2-vCPU machine);
 * a GC helper thread that wakes up takes a CPU from one of them for a scheduler slice — several
 * milliseconds during which its rows wait. E2 (`millrace bench windowed-count`) measured p99
 * 12–17 ms with the helpers and 3.4–5 ms without (docs/benchmarks.md).
 *
 * V8 takes the flag only when the process starts (not from NODE_OPTIONS, nor later), so the CLI
 * starts node again with it, unless it already has it or MILLRACE_GC_THREADS=1 asks for V8's
 * default. The parent passes SIGINT, SIGTERM and SIGHUP on and exits as the child did; the child
 * kills itself at once if the parent dies (a SIGKILL cannot be passed on), so there is never a
 * second copy of a query running after its parent is gone.
 */
export const GC_FLAG = '--single-threaded-gc';

/** Marks the relaunched process (it follows its parent's life). */
const RELAUNCHED = 'MILLRACE_RELAUNCHED';

export function shouldRelaunch(): boolean {
  return !process.execArgv.includes(GC_FLAG) && process.env.MILLRACE_GC_THREADS !== '1';
}

/** Runs `script args` in a node with {@link GC_FLAG}; resolves with its exit code. */
export function relaunch(script: string, args: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, [GC_FLAG, ...process.execArgv, script, ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [RELAUNCHED]: '1' },
  });
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const pass = (signal: NodeJS.Signals) => child.kill(signal);
  for (const s of signals) process.on(s, pass);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      for (const s of signals) process.off(s, pass);
      if (signal !== null) {
        // Die as the child died.
        process.kill(process.pid, signal);
        return;
      }
      resolve(code ?? 1);
    });
    child.on('error', () => resolve(1));
  });
}

/** In a relaunched process: dies at once with its parent, and does not wait for it otherwise. */
export function followParent(): void {
  if (process.env[RELAUNCHED] !== '1' || process.channel === undefined) return;
  delete process.env[RELAUNCHED];
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  process.channel.unref();
}
