/**
 * TestBroker: an in-process, single-node Kafka-protocol broker on 127.0.0.1 for tests that need what
 * librdkafka's mock cluster cannot do: idempotent producing, transactions with read_committed fetching,
 * and fault injection (dropped connections, lost produce acks, restarts, slow responses).
 *
 *   const broker = await TestBroker.start();
 *   new Kafka({ brokers: [broker.bootstrap] }) ...
 *   await broker.close();
 *
 * Node 1 leads every partition and coordinates every group and transaction. Logs live in memory and
 * survive stop()/start(). See protocol.ts for the advertised API versions.
 */
import { createServer, type Server } from 'node:net';
import { decodeBatch } from './batch.js';
import type { Faults } from './handlers/context.js';
import { dispatch } from './handlers/index.js';
import type { Isolation } from './protocol.js';
import { type BrokerOptions, BrokerState } from './state.js';
import { Connection } from './wire.js';

export type { BrokerOptions } from './state.js';

/** A data record as stored, decoded. */
export interface StoredRecord {
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | Buffer[] | undefined>;
  timestamp: number;
}

export class TestBroker {
  private readonly state: BrokerState;
  private readonly connections = new Set<Connection>();
  private readonly faults: Faults = {
    lostProduceAcks: 0,
    expiredTxnCommits: 0,
    droppedTxnCoordinatorLookups: 0,
  };
  private server: Server | null = null;
  private responseDelayMs = 0;
  private port: number;
  private readonly host: string;
  /** The address of every client that connected, for tests that place clients on other hosts. */
  readonly clientAddresses = new Set<string>();

  private constructor(options: BrokerOptions) {
    this.state = new BrokerState(options.autoCreateTopics ?? true);
    this.port = options.port ?? 0;
    this.host = options.host ?? '127.0.0.1';
  }

  /** Starts a broker listening on 127.0.0.1 or `host` (`port` 0, the default, picks a free port). */
  static async start(options: BrokerOptions = {}): Promise<TestBroker> {
    const broker = new TestBroker(options);
    await broker.start();
    return broker;
  }

  /** "127.0.0.1:PORT", for a client's bootstrap servers. */
  get bootstrap(): string {
    return `${this.host}:${this.port}`;
  }

  /** Starts listening again after stop(), on the same port, with everything the broker stored. */
  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((socket) => {
      const conn = new Connection(
        socket,
        (c, header, body) =>
          dispatch(
            { state: this.state, host: this.host, port: this.port, faults: this.faults },
            c,
            header,
            body,
          ),
        () => this.responseDelayMs,
      );
      this.connections.add(conn);
      if (socket.remoteAddress !== undefined) this.clientAddresses.add(socket.remoteAddress);
      socket.on('close', () => this.connections.delete(conn));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (address && typeof address === 'object') this.port = address.port;
    this.server = server;
  }

  /** Like a broker going down: closes the listener and every connection; new connections are refused. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    this.dropConnections();
    await closed;
  }

  /** Stops for good and cancels the group coordinator's timers. */
  async close(): Promise<void> {
    await this.stop();
    this.state.groups.close();
  }

  // ---- fault injection ----

  /** Destroys every client connection now; clients reconnect as after a network blip. */
  dropConnections(): void {
    for (const conn of this.connections) conn.destroy();
    this.connections.clear();
  }

  /**
   * The next `n` Produce requests are appended to the log, but the connection is closed instead of
   * answering, so the client retries: an idempotent producer's retry is recognised, anyone else's
   * is appended again.
   */
  loseNextProduceAck(n = 1): void {
    this.faults.lostProduceAcks += n;
  }

  /**
   * The next `n` transaction commits (EndTxn with commit) find their transaction timed out, as when
   * a producer holds one open past its timeout: the coordinator aborts it and bumps the producer's
   * epoch, and the commit is answered INVALID_PRODUCER_EPOCH.
   */
  expireNextTxnCommit(n = 1): void {
    this.faults.expiredTxnCommits += n;
  }

  /**
   * The next `n` lookups of a transaction coordinator (FindCoordinator for a transactional id) are
   * answered by closing the connection, as when a connection breaks just as a producer asks: kafkajs
   * reports "Failed to find group coordinator" and does not retry it itself.
   */
  dropNextTxnCoordinatorLookup(n = 1): void {
    this.faults.droppedTxnCoordinatorLookups += n;
  }

  /** Delays every response by `ms` (0 turns it off). */
  delayResponses(ms: number): void {
    this.responseDelayMs = ms;
  }

  /**
   * Resolves when a Fetch next finds too little data and starts its long-poll wait, so a test can
   * produce while a fetch is pending.
   */
  nextParkedFetch(): Promise<void> {
    return this.state.nextParkedFetch();
  }

  // ---- direct access for tests ----

  /** Creates a topic; throws if it exists. */
  createTopic(name: string, partitions = 1): void {
    if (!this.state.createTopic(name, partitions)) throw new Error(`topic ${name} already exists`);
  }

  /** Deletes a topic; throws if it does not exist. */
  deleteTopic(name: string): void {
    if (!this.state.deleteTopic(name)) throw new Error(`unknown topic ${name}`);
  }

  topics(): string[] {
    return [...this.state.topics.keys()];
  }

  /** The next offset to be written (with one replica, the high watermark). */
  highWatermark(topic: string, partition: number): number {
    return this.log(topic, partition).logEndOffset;
  }

  /**
   * Resolves once a partition's log reaches `endOffset` (its high watermark), so a test can wait for
   * a client's write to land.
   */
  async appended(topic: string, partition: number, endOffset: number): Promise<void> {
    while (this.highWatermark(topic, partition) < endOffset) {
      await new Promise<void>((resolve) => this.state.onNextData(resolve));
    }
  }

  /**
   * Calls `changed` each time records are appended or a transaction ends, until the returned
   * function is called: what a test waiting for output looks again on.
   */
  onData(changed: () => void): () => void {
    let subscribed = true;
    const arm = () =>
      this.state.onNextData(() => {
        if (!subscribed) return;
        changed();
        arm();
      });
    arm();
    return () => {
      subscribed = false;
    };
  }

  lastStableOffset(topic: string, partition: number): number {
    return this.log(topic, partition).lastStableOffset;
  }

  logStartOffset(topic: string, partition: number): number {
    return this.log(topic, partition).logStartOffset;
  }

  /** Deletes the records before `offset` (advances the log start offset), like DeleteRecords. */
  deleteRecordsBefore(topic: string, partition: number, offset: number): void {
    if (!this.log(topic, partition).deleteBefore(offset)) throw new Error(`offset ${offset} is out of range`);
    this.state.notifyData();
  }

  /**
   * The data records of a partition from the log start on, decoded; control records are left out.
   * With read_committed, records of aborted transactions and those past the last stable offset are too.
   */
  async records(
    topic: string,
    partition: number,
    { isolation = 'read_uncommitted' }: { isolation?: Isolation } = {},
  ): Promise<StoredRecord[]> {
    const log = this.log(topic, partition);
    const committed = isolation === 'read_committed';
    const upper = committed ? log.lastStableOffset : log.logEndOffset;
    const aborted = committed ? log.abortedTxns() : [];
    const out: StoredRecord[] = [];
    for (const stored of log.batchesFrom(log.logStartOffset)) {
      if (stored.baseOffset >= upper) break;
      const batch = await decodeBatch(stored.bytes);
      if (batch.isControlBatch) continue;
      const pid = Number(batch.producerId);
      const wasAborted = (offset: number) =>
        batch.inTransaction &&
        aborted.some((t) => t.producerId === pid && offset >= t.firstOffset && offset <= t.lastOffset);
      for (const r of batch.records) {
        const offset = Number(r.offset);
        if (offset < log.logStartOffset || wasAborted(offset)) continue;
        out.push({ offset, key: r.key, value: r.value, headers: r.headers, timestamp: Number(r.timestamp) });
      }
    }
    return out;
  }

  /** A group's committed offset for a partition (-1 when none). */
  committedOffset(groupId: string, topic: string, partition: number): number {
    return this.state.groups.committed(groupId, topic, partition)?.offset ?? -1;
  }

  private log(topic: string, partition: number) {
    const log = this.state.log(topic, partition);
    if (!log) throw new Error(`unknown partition ${topic}/${partition}`);
    return log;
  }
}
