import { spawn } from 'node:child_process';
import { ErrorCode, MillraceError } from '../errors.js';
import { GC_FLAG } from '../util/gc-settings.js';
import { type ProcessRef, selfRef, setSupervisor } from '../util/process-identity.js';

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
 * 11.7 ms with them and 51.5 ms without, and half the throughput (docs/benchmark-history.md, E4).
 *
 * `--gc single|parallel` (anywhere on the command line) or MILLRACE_GC chooses; without either,
 * the benchmarks of small state (stateless, windowed-count, checkpoint, stream-static-join, idle)
 * run `single` and everything else `parallel`. V8 takes the flag only when a process starts (not
 * from NODE_OPTIONS, nor later), so for `single` the CLI starts node again with it, unless it has
 * it already. The parent passes SIGINT, SIGTERM and SIGHUP on and exits as the child did; the
 * child kills itself at once if the parent dies (a SIGKILL cannot be passed on: the IPC channel
 * between them closes), so there is never a second copy of a query running after its parent is
 * gone. The child knows its parent (pid and start time) as its supervisor: a checkpoint lease it
 * takes names it, and a run started meanwhile that finds the supervisor gone waits the moment the
 * child needs to end rather than failing (docs/operations.md, "One run per checkpoint").
 */
export type GcMode = 'single' | 'parallel';

/** Benchmarks whose query holds little state for what it allocates: they run `single`. */
const SMALL_STATE_BENCHES = new Set([
  'stateless',
  'windowed-count',
  'checkpoint',
  'stream-static-join',
  'idle',
]);

/**
 * Marks the relaunched process (it follows its parent's life), and names the parent:
 * `<pid>:<start time>` (the start time empty where unknown).
 */
const RELAUNCHED = 'MILLRACE_RELAUNCHED';

const encodeRef = (ref: ProcessRef) => `${ref.pid}:${ref.startTime ?? ''}`;

function decodeRef(value: string): ProcessRef | null {
  const match = /^(\d+):(\d*)$/.exec(value);
  if (match === null) return null;
  return { pid: Number(match[1]), startTime: match[2] === '' ? null : Number(match[2]) };
}

/**
 * How far V8 lets the old generation grow between full collections, in percent of what the last
 * one left live (V8's `--heap-growing-percent`), unless `--heap-growth` or MILLRACE_HEAP_GROWTH
 * says otherwise; 0 leaves it to V8.
 *
 * V8's own heuristics start the next full collection once the old generation has grown by a small
 * slack. A query holding millions of keys keeps tens of MB live in each worker and promotes a
 * little garbage all the time, so each worker marked and compacted its whole heap every ≈ 5 s:
 * pauses of 4–11 ms (7 ms of them moving objects and updating the pointers to them), and marking
 * threads that take a CPU from the other worker meanwhile — 50–80 ms during which rows wait, and
 * E4's p99 (`millrace bench fraud`) at 2.7–10 ms. With 400 % a 60-s window saw two full
 * collections (both workers) instead of 14, and p99 1.1–2.0 ms in the 16 runs measured
 * (docs/benchmark-history.md, E4). The cost is memory: garbage that survived to the old generation stays
 * until the next full collection.
 */
export const DEFAULT_HEAP_GROWTH = 400;

/** What the command line asks of the garbage collector (see {@link gcMode}). */
export interface GcChoice {
  mode: GcMode;
  /** Percent (see {@link DEFAULT_HEAP_GROWTH}); 0: V8's own heuristics. */
  heapGrowth: number;
  /** The command line without `--gc` and `--heap-growth`. */
  args: string[];
}

/**
 * The GC mode and heap growth the command line asks for, and the command line without `--gc` and
 * `--heap-growth`. Throws on a mode other than `single` or `parallel`, and on a heap growth that is
 * not a whole percentage from 0 to 10 000.
 */
export function gcMode(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): GcChoice {
  const args: string[] = [];
  let asked: string | undefined = env.MILLRACE_GC;
  let growth: string | undefined = env.MILLRACE_HEAP_GROWTH;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--gc') asked = argv[++i] ?? '';
    else if (a.startsWith('--gc=')) asked = a.slice('--gc='.length);
    else if (a === '--heap-growth') growth = argv[++i] ?? '';
    else if (a.startsWith('--heap-growth=')) growth = a.slice('--heap-growth='.length);
    else args.push(a);
  }
  if (asked !== undefined && asked !== 'single' && asked !== 'parallel') {
    throw new MillraceError(ErrorCode.USAGE, `--gc takes single or parallel, not ${JSON.stringify(asked)}`);
  }
  const heapGrowth = growth === undefined ? DEFAULT_HEAP_GROWTH : Number(growth);
  if (growth !== undefined && (!/^\d+$/.test(growth) || heapGrowth > 10_000)) {
    throw new MillraceError(
      ErrorCode.USAGE,
      `--heap-growth takes a percentage from 0 (V8's own heuristics) to 10000, not ${JSON.stringify(growth)}`,
    );
  }
  const mode =
    asked ?? (args[0] === 'bench' && SMALL_STATE_BENCHES.has(args[1] ?? '') ? 'single' : 'parallel');
  return { mode, heapGrowth, args };
}

/** Runs `script args` in a node with {@link GC_FLAG}; resolves with its exit code. */
export function relaunch(script: string, args: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, [GC_FLAG, ...process.execArgv, script, ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [RELAUNCHED]: encodeRef(selfRef()) },
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

/**
 * In a relaunched process: records the parent as this process's supervisor, dies at once with it
 * (also when it is gone already), and does not wait for it otherwise.
 */
export function followParent(): void {
  const parent = decodeRef(process.env[RELAUNCHED] ?? '');
  if (parent === null || process.channel === undefined) return;
  delete process.env[RELAUNCHED];
  const die = () => process.kill(process.pid, 'SIGKILL');
  process.on('disconnect', die);
  // Orphaned already: the parent died while this process was starting.
  if (process.ppid !== parent.pid) die();
  setSupervisor(parent);
  process.channel.unref();
}
