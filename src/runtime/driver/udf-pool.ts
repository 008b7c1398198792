import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { deserializeError, ErrorCode, MillraceError } from '../../errors.js';
import type { UdfWorkerMessage, UdfWorkerSpec } from '../messages.js';
import { LongTask } from './long-task.js';

const WORKER_FILE = new URL('../udf/udf-worker.js', import.meta.url).href;
/** How long a UDF thread may take to leave user code at the query's end before it is ended. */
const RETURN_GRACE_MS = 1000;

/**
 * The query's second set of threads, apart from the hosts: they run Arrow UDFs and mapInArrow
 * functions, so slow user code never stalls a task loop. One long-running Piscina task per thread
 * (`udfWorkers` of them, never more than there are channels) on the process's reserve
 * ({@link LongTask}), started with the hosts and ended with the query: the driver raises the stop
 * flag and rings their doorbells, and each thread returns to the reserve — except one that failed,
 * or that is still in user code a moment later, which is ended.
 */
export class UdfPool {
  private readonly tasks: LongTask[] = [];
  private readonly failedThreads = new Set<number>();
  private readonly ports: MessagePort[] = [];
  private readonly control: Int32Array;
  private readonly ready = new Set<number>();
  private readyWaiter: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private closing = false;
  private closed: Promise<void> | null = null;
  private readonly ended: Promise<unknown>[] = [];
  /** Each port's 'close' event (ports close asynchronously). */
  private readonly portsClosed: Promise<unknown>[] = [];

  constructor(
    private readonly specs: readonly Omit<UdfWorkerSpec, 'port'>[],
    control: SharedArrayBuffer,
    private readonly ring: (bell: number) => void,
    private readonly failed: (e: MillraceError) => void,
  ) {
    this.control = new Int32Array(control);
  }

  /** Starts every UDF thread; resolves once each has built the plan. */
  async start(timeoutMs: number): Promise<void> {
    if (this.specs.length === 0) return;
    const ready = new Promise<void>((resolve, reject) => {
      this.readyWaiter = { resolve, reject };
    });
    for (const spec of this.specs) {
      const { port1, port2 } = new MessageChannel();
      this.ports.push(port1);
      this.portsClosed.push(new Promise((resolve) => port1.once('close', resolve)));
      port1.on('message', (m: UdfWorkerMessage) => this.onMessage(m));
      const task = new LongTask(WORKER_FILE, { ...spec, port: port2 }, [port2]);
      this.tasks.push(task);
      this.ended.push(
        task.settled.then(
          () => this.onExit(spec.workerIndex, null),
          (e: unknown) => this.onExit(spec.workerIndex, e),
        ),
      );
    }
    const timeout = setTimeout(
      () =>
        this.readyWaiter?.reject(
          new MillraceError(ErrorCode.TASK_FAILED, `UDF workers did not start within ${timeoutMs} ms`),
        ),
      timeoutMs,
    );
    try {
      await ready;
    } finally {
      clearTimeout(timeout);
      this.readyWaiter = undefined;
    }
  }

  /**
   * Ends the UDF threads (the query is over); resolves once every thread and port is gone.
   * Idempotent: a second call waits for the first.
   */
  close(): Promise<void> {
    this.closed ??= this.end();
    return this.closed;
  }

  private async end(): Promise<void> {
    if (this.specs.length === 0) return;
    this.closing = true;
    Atomics.store(this.control, 0, 1);
    for (const s of this.specs) this.ring(s.bell);
    for (const p of this.ports) p.close();
    await Promise.all(
      this.tasks.map((t, i) => (this.failedThreads.has(i) ? t.end() : t.giveBack(RETURN_GRACE_MS))),
    );
    await Promise.allSettled(this.ended);
    await Promise.all(this.portsClosed);
  }

  private onMessage(m: UdfWorkerMessage): void {
    if (m.type === 'ready') {
      this.tasks[m.workerIndex]?.ranOn(m.threadId);
      this.ready.add(m.workerIndex);
      if (this.ready.size === this.specs.length) this.readyWaiter?.resolve();
      return;
    }
    this.failedThreads.add(m.workerIndex);
    const error = deserializeError(m.error);
    if (this.readyWaiter !== undefined) this.readyWaiter.reject(error);
    else if (!this.closing) this.failed(error);
  }

  private onExit(index: number, error: unknown): void {
    if (this.closing || error === null) return;
    const e = new MillraceError(
      ErrorCode.TASK_FAILED,
      `UDF worker ${index} ended unexpectedly: ${(error as Error)?.message ?? String(error)}`,
      { cause: error },
    );
    if (this.readyWaiter !== undefined) this.readyWaiter.reject(e);
    else this.failed(e);
  }
}
