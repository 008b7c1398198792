import v8 from 'node:v8';

/**
 * The process's garbage-collection settings that a report of it names: whether V8 collects
 * single-threaded, and how far the old generation may grow between full collections. The command
 * line chooses them when it starts (src/cli/relaunch.ts); the benchmarks print them beside every
 * result.
 */

/** V8's flag for a GC without helper threads; it takes effect only when node starts with it. */
export const GC_FLAG = '--single-threaded-gc';

/** The old generation's growth this process set (see {@link setHeapGrowth}); null: V8's own. */
let heapGrowthSet: number | null = null;

/**
 * Has V8 let the old generation grow `percent` between full collections, in every thread of the
 * process (V8 reads the flag at each full collection, so it applies from the next one on). Leaves
 * V8's heuristics alone for 0, and when node was started with `--heap-growing-percent` itself.
 */
export function setHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): void {
  if (percent === 0 || execArgv.some((a) => a.startsWith('--heap-growing-percent'))) return;
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
  heapGrowthSet = percent;
}

/** The old generation's growth set by {@link setHeapGrowth}, or null when V8 chooses. */
export function heapGrowthInForce(): number | null {
  return heapGrowthSet;
}

/** Whether the process collects garbage single-threaded. */
export function singleThreadedGc(): boolean {
  return process.execArgv.includes(GC_FLAG);
}
