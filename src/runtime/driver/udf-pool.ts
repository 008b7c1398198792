import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { deserializeError, ErrorCode, MillraceError } from '../../errors.js';
import type { UdfWorkerMessage, UdfWorkerSpec } from '../messages.js';
import { longTaskPool } from './long-task-pool.js';

const WORKER_FILE = new URL('../udf/udf-worker.js', import.meta.url).href;

/**
 * The query's second pool of threads, apart from the hosts: they run Arrow UDFs and mapInArrow
 * functions, so slow user code never stalls a task loop. One long-running Piscina task per thread
 * (`udfWorkers` of them, never more than there are channels), started with the hosts and ended
 * with the query: the driver raises the stop flag and rings their doorbells, then destroys the pool.
 */
export class UdfPool {
  private readonly pool: Piscina | null;
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
    this.pool = specs.length === 0 ? null : longTaskPool(WORKER_FILE, specs.length);
  }

  /** Starts every UDF thread; resolves once each has built the plan. */
  async start(timeoutMs: number): Promise<void> {
    if (this.pool === null) return;
    const ready = new Promise<void>((resolve, reject) => {
      this.readyWaiter = { resolve, reject };
    });
    for (const spec of this.specs) {
      const { port1, port2 } = new MessageChannel();
      this.ports.push(port1);
      this.portsClosed.push(new Promise((resolve) => port1.once('close', resolve)));
      port1.on('message', (m: UdfWorkerMessage) => this.onMessage(m));
      this.ended.push(
        this.pool.run({ ...spec, port: port2 }, { transferList: [port2] }).then(
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
    if (this.pool === null) return;
    this.closing = true;
    Atomics.store(this.control, 0, 1);
    for (const s of this.specs) this.ring(s.bell);
    // A thread in user code that never returns is ended by destroy().
    for (const p of this.ports) p.close();
    await this.pool.destroy();
    await Promise.allSettled(this.ended);
    await Promise.all(this.portsClosed);
  }

  private onMessage(m: UdfWorkerMessage): void {
    if (m.type === 'ready') {
      this.ready.add(m.workerIndex);
      if (this.ready.size === this.specs.length) this.readyWaiter?.resolve();
      return;
    }
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
