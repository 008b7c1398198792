/**
 * The node options a worker thread takes from its process. V8's flags (`--max-old-space-size`,
 * `--single-threaded-gc`, `--stack-size`, ...) are the process's, in force in every thread
 * already, and a Worker refuses to start with any of them in its execArgv
 * (ERR_WORKER_INVALID_EXEC_ARGV); node's own options (`--import`, `--conditions`,
 * `--enable-source-maps`, ...) are passed on. The test runner's options are not (a worker is no
 * test).
 */

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

export function workerExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  return execArgv.filter((arg) => {
    if (!arg.startsWith('--')) return true;
    const name = arg.split('=', 1)[0]!;
    if (name.startsWith('--test')) return false;
    // Profiling: each thread writes its own profile.
    if (name.startsWith('--cpu-prof') || name.startsWith('--heap-prof')) return true;
    return process.allowedNodeEnvironmentFlags.has(name) && !V8_OPTIONS.has(name);
  });
}
