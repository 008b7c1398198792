import { once } from 'node:events';
import type { MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { workerExecArgv } from '../../util/worker-exec-argv.js';

/** How long a thread no query uses waits for the next one before it ends. */
const RESERVE_IDLE_MS = 30_000;
/** Far more threads than a process runs queries on at once: a long task never waits for a thread. */
const RESERVE_MAX_THREADS = 1024;

const reserves = new Map<string, Piscina>();

/**
 * The threads of this process that run long-lived tasks of `filename`, shared by all its queries.
 * Each task has a thread of its own for as long as it runs (one task per thread, a new thread when
 * none is free), and a thread whose task returned waits for the next query's instead of ending:
 * starting a thread costs about half a second of CPU (node's bootstrap, the engine's modules, the
 * job's), so a query started after another one ended (a restart, a test, an application that
 * stops and starts queries) starts on warm threads. A task whose run did not end cleanly (a
 * failure, an abort) does not return: its driver ends the thread with {@link LongTask.end}, so
 * nothing it left behind (a sink's write in flight, a timer) reaches the next query. Idle threads
 * never keep the process alive, and end after {@link RESERVE_IDLE_MS}.
 */
function reserve(filename: string): Piscina {
  let pool = reserves.get(filename);
  if (pool === undefined) {
    pool = new Piscina({
      filename,
      minThreads: 0,
      maxThreads: RESERVE_MAX_THREADS,
      concurrentTasksPerWorker: 1,
      idleTimeout: RESERVE_IDLE_MS,
      atomics: 'disabled',
      execArgv: workerExecArgv(),
    });
    reserves.set(filename, pool);
  }
  return pool;
}

/**
 * Ends every thread of the process's reserves, waiting for them to exit: the next query starts on
 * new threads, as in a new process (a benchmark of a cold start). Only while no query runs: a task
 * still running would be ended with its thread.
 */
export async function endThreadReserves(): Promise<void> {
  const pools = [...reserves.values()];
  reserves.clear();
  await Promise.all(pools.map((p) => p.destroy()));
}

/** One long-lived task on a thread of the process's reserve (see {@link reserve}). */
export class LongTask {
  /** Settles when the task returns, throws, or its thread ends. */
  readonly settled: Promise<unknown>;
  private readonly aborter = new AbortController();
  private readonly pool: Piscina;
  private threadId: number | undefined;

  constructor(filename: string, task: unknown, transferList: MessagePort[]) {
    this.pool = reserve(filename);
    this.settled = this.pool.run(task, {
      transferList,
      signal: this.aborter.signal,
    });
  }

  /** The task says which thread it runs on (its first message), so that {@link end} can wait for it. */
  ranOn(threadId: number): void {
    this.threadId = threadId;
  }

  /**
   * The task ended cleanly and returns: resolves once it has and its thread is back in the
   * reserve. One that has not returned within `graceMs` (user code that never returns) loses its
   * thread instead ({@link end}).
   */
  async giveBack(graceMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      this.settled.then(
        () => false,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (late) await this.end();
  }

  /**
   * Ends the task's thread (or takes the task off the queue if no thread took it yet); resolves once
   * the thread is gone.
   */
  async end(): Promise<void> {
    const thread = this.pool.threads.find((t) => t.threadId === this.threadId);
    const exited = thread === undefined ? Promise.resolve() : once(thread, 'exit');
    this.aborter.abort();
    await Promise.allSettled([this.settled, exited]);
  }
}
