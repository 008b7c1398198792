import { deserializeError } from '../../errors.js';
import type { DriverMessage, HostMessage } from '../messages.js';

/**
 * The driver's side of `commitSink`: asks every live host to commit an epoch in its sink
 * partitions (an exactly-once Kafka sink's transactions) and resolves once all answered. A host
 * that ends has nothing left to commit; a failed run rejects every commit still waiting.
 */
export class HostSinkCommits {
  private readonly waiting = new Map<
    number,
    { hosts: Set<number>; resolve: () => void; reject: (e: unknown) => void }
  >();

  constructor(
    /** The hosts still running, by index. */
    private readonly liveHosts: () => number[],
    private readonly post: (host: number, message: DriverMessage) => void,
  ) {}

  /** Asks every live host to commit epoch `epoch`; resolves once all did. */
  request(epoch: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const hosts = new Set(this.liveHosts());
      if (hosts.size === 0) {
        resolve();
        return;
      }
      this.waiting.set(epoch, { hosts, resolve, reject });
      for (const h of hosts) this.post(h, { type: 'commitSink', epoch });
    });
  }

  /** A host answered. */
  answered(m: HostMessage & { type: 'sinkCommitted' }): void {
    const w = this.waiting.get(m.epoch);
    if (w === undefined) return;
    if (m.error !== undefined) {
      this.waiting.delete(m.epoch);
      w.reject(deserializeError(m.error));
      return;
    }
    this.settle(m.epoch, m.hostIndex);
  }

  /** A host ended: it has no sink partition left to commit anything. */
  hostEnded(host: number): void {
    for (const epoch of [...this.waiting.keys()]) this.settle(epoch, host);
  }

  /** The run failed: commits still waiting end with it. */
  failAll(error: unknown): void {
    for (const w of this.waiting.values()) w.reject(error);
    this.waiting.clear();
  }

  private settle(epoch: number, host: number): void {
    const w = this.waiting.get(epoch)!;
    w.hosts.delete(host);
    if (w.hosts.size === 0) {
      this.waiting.delete(epoch);
      w.resolve();
    }
  }
}
