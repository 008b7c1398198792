import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { deserializeError, ErrorCode, MillraceError } from '../../errors.js';
import type { HostMessage, HostSpec } from '../messages.js';
import { LongTask } from './long-task.js';

/** How long the driver waits for a finished host's final report. */
const FINAL_REPORT_GRACE_MS = 1000;
/** How long a host that ended cleanly may take to give its thread back before the thread is ended. */
const RETURN_GRACE_MS = 5000;

const WORKER_FILE = new URL('../worker/worker-entry.js', import.meta.url).href;

/** What a {@link HostPool} tells the runtime. */
export interface HostPoolEvents {
  /** A host's report: a progress round's answer, or (`gen` −1) its last one. */
  report(m: HostMessage & { type: 'report' }): void;
  sinkCommitted(m: HostMessage & { type: 'sinkCommitted' }): void;
  /** A host's task failed, or a worker thread ended unexpectedly. */
  failed(error: MillraceError): void;
  /** Host `index` is done: it will answer nothing more. */
  hostEnded(index: number): void;
}

interface HostState {
  task: LongTask;
  ready: boolean;
  done: boolean;
  /** Its final report said every task ran to its end: the thread goes back to the reserve. */
  clean: boolean;
  port: MessagePort;
  /** Settles when the port closes: at shutdown, or earlier when the worker thread died. */
  closed: Promise<unknown>;
}

/**
 * The worker threads hosting a query's tasks: one long-running Piscina task per host (Piscina is
 * never called per record) on a thread of the process's reserve ({@link LongTask}), each with a
 * message port of its own for its reports, failures and sink commits. It knows which hosts are
 * ready and which are done.
 */
export class HostPool {
  private readonly hosts: HostState[] = [];
  private readyWaiter: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private allDone!: () => void;
  /** Resolves once every host is done. */
  readonly done: Promise<void>;
  private closing = false;

  constructor(
    private readonly specs: readonly Omit<HostSpec, 'port'>[],
    private readonly events: HostPoolEvents,
  ) {
    this.done = new Promise((resolve) => {
      this.allDone = resolve;
    });
  }

  get count(): number {
    return this.specs.length;
  }

  /** The hosts not done yet. */
  live(): number[] {
    return this.hosts.flatMap((h, i) => (h.done ? [] : [i]));
  }

  post(index: number, message: unknown): void {
    this.hosts[index]!.port.postMessage(message);
  }

  /**
   * Starts every host; resolves once all of them have built the plan and are running. Rejects
   * when they do not within `timeoutMs`, or when {@link failStart} is called meanwhile.
   */
  async start(timeoutMs: number): Promise<void> {
    const ready = new Promise<void>((resolve, reject) => {
      this.readyWaiter = { resolve, reject };
    });
    for (const spec of this.specs) {
      const { port1, port2 } = new MessageChannel();
      const closed = new Promise((resolve) => port1.once('close', resolve));
      const task = new LongTask(WORKER_FILE, { ...spec, port: port2 }, [port2]);
      this.hosts.push({ task, ready: false, done: false, clean: false, port: port1, closed });
      port1.on('message', (m: HostMessage) => this.onMessage(m));
      task.settled.then(
        () => this.onExit(spec.hostIndex, null),
        (e: unknown) => this.onExit(spec.hostIndex, e),
      );
    }
    const timeout = setTimeout(() => {
      this.readyWaiter?.reject(
        new MillraceError(ErrorCode.TASK_FAILED, `workers did not start within ${timeoutMs} ms`),
      );
    }, timeoutMs);
    try {
      await ready;
    } finally {
      clearTimeout(timeout);
      this.readyWaiter = undefined;
    }
  }

  /** While {@link start} waits: makes it reject with `error` and returns true. Else false. */
  failStart(error: Error): boolean {
    if (this.readyWaiter === undefined) return false;
    this.readyWaiter.reject(error);
    return true;
  }

  /** The query is shutting down: a worker thread that ends now is no failure. */
  closingDown(): void {
    this.closing = true;
  }

  /**
   * Closes the ports; the threads of hosts that ended cleanly go back to the reserve, the others
   * end. Resolves once every host's task is over and its thread given back or gone.
   */
  async close(): Promise<void> {
    this.closing = true;
    // Ports close asynchronously: wait for them, so no handle outlives the query.
    // (A dead worker's port closed already; listening for 'close' now would wait forever.)
    const closed = this.hosts.map((h) => h.closed);
    for (const h of this.hosts) h.port.close();
    await Promise.all(this.hosts.map((h) => (h.clean ? h.task.giveBack(RETURN_GRACE_MS) : h.task.end())));
    await Promise.all(closed);
  }

  private onMessage(m: HostMessage): void {
    const host = this.hosts[m.hostIndex]!;
    switch (m.type) {
      case 'ready':
        host.ready = true;
        host.task.ranOn(m.threadId);
        if (this.hosts.length === this.specs.length && this.hosts.every((h) => h.ready))
          this.readyWaiter?.resolve();
        return;
      case 'report':
        this.events.report(m);
        if (m.gen === -1) {
          host.clean = m.clean === true;
          this.markDone(m.hostIndex);
        }
        return;
      case 'failed': {
        const error = deserializeError(m.error);
        this.markDone(m.hostIndex);
        this.events.failed(error);
        return;
      }
      case 'sinkCommitted':
        this.events.sinkCommitted(m);
        return;
    }
  }

  private onExit(index: number, error: unknown): void {
    const host = this.hosts[index];
    if (!host || host.done) return;
    if (error === null) {
      // The host's last message travels on its own port and may arrive after Piscina's answer;
      // give it a moment before counting the host as done without it.
      setTimeout(() => this.markDone(index), FINAL_REPORT_GRACE_MS).unref();
      return;
    }
    this.markDone(index);
    if (this.closing) return;
    this.events.failed(
      new MillraceError(
        ErrorCode.TASK_FAILED,
        `worker ${index} ended unexpectedly${error ? `: ${(error as Error).message ?? String(error)}` : ''}`,
        { cause: error },
      ),
    );
  }

  private markDone(index: number): void {
    const host = this.hosts[index]!;
    if (host.done) return;
    host.done = true;
    this.events.hostEnded(index);
    if (this.hosts.length === this.specs.length && this.hosts.every((h) => h.done)) this.allDone();
  }
}
