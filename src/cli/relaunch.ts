import { spawn } from 'node:child_process';

/**
 * How the CLI's process collects garbage: `single` — V8's `--single-threaded-gc`, each thread
 * collects its own garbage and V8 starts no helper threads beside it — or `parallel`, V8's
 * default (parallel scavenges, concurrent marking and sweeping on helper threads).
 *
 * The engine's worker threads spin while they wait for rows and so hold the CPUs (two of them on a
 * 2-vCPU machine): a GC helper thread that wakes up takes a CPU from one of them for a scheduler
 * slice, milliseconds during which its rows wait. A query whose state is small beside its
 * allocation rate gains from `single`: E2 (`millrace bench windowed-count`) measured p99 ≈ 4 ms
 * against 12–17 ms. A query with a large, churning state needs the helpers to mark its old
 * generation concurrently: E4 (`millrace bench fraud`, millions of state rows) measured p99
 * 11.7 ms with them and 51.5 ms without, and half the throughput (docs/benchmarks.md).
 *
 * `--gc single|parallel` (anywhere on the command line) or MILLRACE_GC chooses; without either,
 * the benchmarks of small state (stateless, windowed-count, checkpoint, stream-static-join, idle)
 * run `single` and everything else `parallel`. V8 takes the flag only when a process starts (not
 * from NODE_OPTIONS, nor later), so for `single` the CLI starts node again with it, unless it has
 * it already. The parent passes SIGINT, SIGTERM and SIGHUP on and exits as the child did; the
 * child kills itself at once if the parent dies (a SIGKILL cannot be passed on), so there is never
 * a second copy of a query running after its parent is gone.
 */
export type GcMode = 'single' | 'parallel';

export const GC_FLAG = '--single-threaded-gc';

/** Benchmarks whose query holds little state for what it allocates: they run `single`. */
const SMALL_STATE_BENCHES = new Set([
  'stateless',
  'windowed-count',
  'checkpoint',
  'stream-static-join',
  'idle',
]);

/** Marks the relaunched process (it follows its parent's life). */
const RELAUNCHED = 'MILLRACE_RELAUNCHED';

/**
 * The GC mode the command line asks for, and the command line without `--gc`. Throws on a mode
 * other than `single` or `parallel`.
 */
export function gcMode(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): { mode: GcMode; args: string[] } {
  const args: string[] = [];
  let asked: string | undefined = env.MILLRACE_GC;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--gc') asked = argv[++i];
    else if (a.startsWith('--gc=')) asked = a.slice('--gc='.length);
    else args.push(a);
  }
  if (asked !== undefined && asked !== 'single' && asked !== 'parallel') {
    throw new Error(`--gc takes single or parallel, not ${JSON.stringify(asked)}`);
  }
  const mode =
    asked ?? (args[0] === 'bench' && SMALL_STATE_BENCHES.has(args[1] ?? '') ? 'single' : 'parallel');
  return { mode, args };
}

/** Whether the process collects garbage single-threaded. */
export function singleThreadedGc(): boolean {
  return process.execArgv.includes(GC_FLAG);
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
