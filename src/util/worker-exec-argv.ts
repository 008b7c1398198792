/**
 * The node options a worker thread takes from its process. V8's flags (`--max-old-space-size`,
 * `--single-threaded-gc`, `--stack-size`, ...) are the process's, in force in every thread
 * already, and a Worker refuses to start with any of them in its execArgv
 * (ERR_WORKER_INVALID_EXEC_ARGV); node's own options (`--import`, `--conditions`,
 * `--enable-source-maps`, ...) are passed on — except those node keeps for the whole process
 * (`--v8-pool-size`, `--secure-heap`, `--tls-cipher-list`, ...), which a Worker refuses too. The
 * test runner's options are not passed on (a worker is no test).
 *
 * Node 24's test runner starts each test file with every such option set to its default, so the
 * list matters: a worker started from a test took them all, and refused to start.
 */
import { Worker } from 'node:worker_threads';

/** V8 options node accepts in NODE_OPTIONS: listed among node's flags, refused by workers all the same. */
const V8_OPTIONS = new Set([
  '--abort-on-uncaught-exception',
  '--disallow-code-generation-from-strings',
  '--enable-etw-stack-walking',
  '--expose-gc',
  '--huge-max-old-generation-size',
  '--interpreted-frames-native-stack',
  '--jitless',
  '--max-old-space-size',
  '--max-semi-space-size',
  '--perf-basic-prof',
  '--perf-basic-prof-only-functions',
  '--perf-prof',
  '--perf-prof-unwinding-info',
  '--stack-trace-limit',
]);

/** Options node keeps for the whole process (its per-process options): a Worker refuses them. */
const PER_PROCESS_OPTIONS = new Set([
  '--build-snapshot',
  '--build-snapshot-config',
  '--debug-arraybuffer-allocations',
  '--enable-fips',
  '--force-fips',
  '--icu-data-dir',
  '--node-snapshot',
  '--no-node-snapshot',
  '--openssl-config',
  '--openssl-legacy-provider',
  '--openssl-shared-config',
  '--secure-heap',
  '--secure-heap-min',
  '--snapshot-blob',
  '--title',
  '--tls-cipher-list',
  '--trace-event-categories',
  '--trace-event-file-pattern',
  '--trace-sigint',
  '--use-bundled-ca',
  '--use-largepages',
  '--use-openssl-ca',
  '--v8-pool-size',
  '--zero-fill-buffers',
]);

let cached: { execArgv: readonly string[]; accepted: string[] } | undefined;

/**
 * The options of `execArgv` a worker thread starts with. A flag the lists above miss (a newer
 * node's) is found the first time: a Worker refuses such flags when it is made, and names them.
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  if (cached?.execArgv === execArgv) return [...cached.accepted];
  let accepted = candidates(execArgv);
  for (let tries = 0; tries < 3; tries++) {
    // Profiling flags are known to be taken, and a probe that had them would write a profile.
    const unsure = accepted.filter((arg) => !isProfiling(arg.split('=', 1)[0]!));
    if (unsure.length === 0) break;
    const refused = refusedBy(unsure);
    if (refused.size === 0) break;
    accepted = accepted.filter((arg) => !refused.has(arg.split('=', 1)[0]!) && !refused.has(arg));
  }
  cached = { execArgv, accepted };
  return [...accepted];
}

/** The flags a Worker refuses among `execArgv` (empty when it takes them all). */
function refusedBy(execArgv: string[]): Set<string> {
  try {
    const probe = new Worker('', { eval: true, execArgv });
    void probe.terminate();
    return new Set();
  } catch (e) {
    const m = /invalid execArgv flags: (.*)$/s.exec((e as Error).message);
    if ((e as { code?: string }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV' || m === null) throw e;
    return new Set(m[1]!.split(', ').map((f) => f.trim()));
  }
}

const isProfiling = (name: string) => name.startsWith('--cpu-prof') || name.startsWith('--heap-prof');

function candidates(execArgv: readonly string[]): string[] {
  return execArgv.filter((arg) => {
    if (!arg.startsWith('--')) return true;
    const name = arg.split('=', 1)[0]!;
    if (name.startsWith('--test')) return false;
    // Profiling: each thread writes its own profile.
    if (isProfiling(name)) return true;
    return (
      process.allowedNodeEnvironmentFlags.has(name) && !V8_OPTIONS.has(name) && !PER_PROCESS_OPTIONS.has(name)
    );
  });
}
