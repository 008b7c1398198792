import { Piscina } from 'piscina';
import { workerExecArgv } from '../../util/worker-exec-argv.js';

/**
 * A Piscina pool of `threads` threads, each to run one long-lived task of `filename` for the life
 * of a query (the hosts, the UDF threads): Piscina is never called per record.
 */
export function longTaskPool(filename: string, threads: number): Piscina {
  return new Piscina({
    filename,
    minThreads: threads,
    maxThreads: threads,
    concurrentTasksPerWorker: 1,
    idleTimeout: 60_000,
    // The tasks park with Atomics.waitAsync; Piscina must not block the worker's loop itself.
    atomics: 'disabled',
    execArgv: workerExecArgv(),
  });
}
