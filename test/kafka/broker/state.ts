/**
 * Everything the broker knows, independent of sockets: topics and their partition logs, the group and
 * transaction coordinators, producer id allocation, and the "data arrived" signal long-polls wait on.
 * It outlives stop()/start(), which is what makes a restart keep logs, producer state and offsets.
 */
import { GroupCoordinator } from './groups.js';
import { PartitionLog } from './log.js';
import { TransactionCoordinator } from './txn.js';

export interface BrokerOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Address to listen on and advertise (default 127.0.0.1). */
  host?: string;
  /** Whether Metadata requests that allow it create unknown topics (1 partition). Default true. */
  autoCreateTopics?: boolean;
}

export class BrokerState {
  readonly topics = new Map<string, PartitionLog[]>();
  readonly groups = new GroupCoordinator();
  readonly txns = new TransactionCoordinator(this);
  private lastProducerId = 999;
  private readonly waiters = new Set<() => void>();
  private readonly parkedListeners = new Set<() => void>();

  constructor(readonly autoCreateTopics: boolean) {}

  /** Creates a topic; false if it already exists. */
  createTopic(name: string, partitions: number): boolean {
    if (this.topics.has(name)) return false;
    this.topics.set(
      name,
      Array.from({ length: partitions }, () => new PartitionLog()),
    );
    this.notifyData();
    return true;
  }

  deleteTopic(name: string): boolean {
    const existed = this.topics.delete(name);
    this.notifyData();
    return existed;
  }

  log(topic: string, partition: number): PartitionLog | undefined {
    return this.topics.get(topic)?.[partition];
  }

  nextProducerId(): number {
    return ++this.lastProducerId;
  }

  /** Wakes every waiting long-poll fetch so it re-reads the logs. */
  notifyData(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  }

  /** Calls `wake` once, on the next notifyData() (records appended or transactions ended). */
  onNextData(wake: () => void): void {
    this.waiters.add(wake);
  }

  /** Resolves on the next notifyData(), after `ms`, or when `signal` aborts, whichever comes first. */
  waitForData(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
      const parked = [...this.parkedListeners];
      this.parkedListeners.clear();
      for (const notify of parked) notify();
    });
  }

  /** Resolves when a fetch next starts waiting for data (lets tests produce into a pending long-poll). */
  nextParkedFetch(): Promise<void> {
    return new Promise((resolve) => this.parkedListeners.add(resolve));
  }
}
