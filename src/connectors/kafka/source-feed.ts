import type { MillraceError } from '../../errors.js';
import type { DriverFeed, FeedContext } from '../contract.js';
import type { KafkaSourceSpec } from '../spec.js';
import { GroupOffsets } from './group-offsets.js';
import type { TopicPartition } from './layout.js';
import { LostPartitions } from './lost-partitions.js';
import { PartitionFeed } from './partition-feed.js';
import {
  asReadFailure,
  type KafkaReader,
  type PartitionRef,
  partitionKey,
  type ReadPartition,
  readFailed,
} from './reader.js';
import { kafkaReader } from './readers.js';

/** How long the end of a query waits for its last group commit. */
const DISPOSE_WAIT_MS = 5000;

/** Consecutive failed fetches are retried (backoff up to 1 s) for this long, then the query fails. */
const RETRY_FOR_MS = 30_000;

/**
 * The driver's end of a Kafka source: it fetches each partition from an exact offset and sends
 * the records, key and value as bytes, to the partition's source task (which decodes them).
 *
 * - Real-time mode: every partition is fetched continuously. Fetches are long polls answered as
 *   soon as a record arrives (`minBytes` 1, `fetchMaxWait` at most), one per leader broker at a
 *   time; a partition whose ring is full is not fetched until it drains, so memory stays bounded.
 * - Micro-batch mode: latest offsets are listed every poll and when a batch is planned; a batch's
 *   end at a partition (`endAt`) makes the feed fetch exactly up to it and then write the batch's
 *   marker.
 *
 * Each partition's offsets, and the rows and markers written to its ring, are kept by its
 * {@link PartitionFeed}; partitions whose topic was deleted are found by {@link LostPartitions}.
 * The brokers are talked to through a {@link KafkaReader}, on the client library the source names.
 */
export class KafkaSourceFeed implements DriverFeed {
  onData: (() => void) | undefined;
  private readonly partitions: readonly TopicPartition[];
  /** One per source partition, in order. */
  private readonly feeds: readonly PartitionFeed[];
  private readonly reader: KafkaReader;
  private connected = false;
  private live = false;
  private closed = false;
  private failed: (e: unknown) => void = () => {};
  /** Wakes fetch loops waiting for work. */
  private wake: (() => void) | null = null;
  private loops: Promise<void> | null = null;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly groupOffsets: GroupOffsets | null;
  private readonly lostPartitions: LostPartitions;
  /** `caughtUp` calls waiting for positions to reach their targets. */
  private catchUps: { target: number[]; resolve: () => void }[] = [];
  /** Micro-batch execution: fetch only what a batch takes. */
  private readonly microBatch: boolean;

  constructor(
    readonly spec: KafkaSourceSpec,
    context: FeedContext,
  ) {
    this.microBatch = context.microBatch;
    this.partitions = spec.topicPartitions ?? [];
    this.feeds = this.partitions.map(
      ([t, kp], p) => new PartitionFeed(spec, t, kp, context.ports[p]!, context.now),
    );
    this.reader = kafkaReader({
      brokers: spec.brokers,
      client: spec.client,
      library: spec.library ?? 'kafkajs',
      isolationLevel: spec.isolationLevel,
    });
    this.groupOffsets =
      spec.groupId === undefined
        ? null
        : new GroupOffsets(spec.groupId, this.partitions, () => (this.connected ? this.reader : null));
    this.lostPartitions = new LostPartitions(
      spec,
      this.feeds,
      this.reader,
      (e) => this.failed(e),
      () => this.settleCatchUps(),
    );
  }

  /** Connects to the brokers and starts the fetch loops (idle until there is something to fetch). */
  async open(_dir: string | null, failed: (e: unknown) => void): Promise<void> {
    await this.connect(failed);
    await this.listLatest();
  }

  /** Lists the latest offsets; with `caughtUp`, waits until the rows up to them have been sent. */
  async refresh(caughtUp = false): Promise<void> {
    await this.listLatest();
    if (caughtUp) await this.caughtUp();
  }

  private async connect(failed: (e: unknown) => void): Promise<void> {
    // A read failure ends the feed: nothing more is fetched, nothing waits for it.
    this.failed = (e) => {
      if (this.closed) return;
      this.close();
      failed(e);
    };
    try {
      await this.reader.connect(this.partitions.map(([t]) => t));
    } catch (e) {
      throw this.readFailed('cannot connect', e);
    }
    this.connected = true;
    if (this.closed) return;
    this.loops = this.runLoops();
  }

  /** A resumed run (and every first run: the starting offsets): fetching starts at these offsets. */
  resumeAt(offsets: readonly number[]): void {
    for (let p = 0; p < this.feeds.length; p++) this.feeds[p]!.resumeAt(offsets[p] ?? 0);
  }

  /** Real-time mode: from now on every partition is fetched as records arrive. */
  feedAll(): void {
    if (this.microBatch || this.closed) return;
    this.live = true;
    this.kick();
  }

  /** Ends epoch `epoch` at `end` on a partition: its marker follows the rows before `end`. */
  endAt(partition: number, epoch: number, end: number): void {
    this.feeds[partition]!.endAt(epoch, end);
    this.kick();
  }

  /**
   * Resolves once every partition's rows up to its latest known offset have been sent (real-time
   * mode; `processAllAvailable` waits for it before its probe follows the rows).
   */
  caughtUp(): Promise<void> {
    if (this.microBatch || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.catchUps.push({ target: this.latestOffsets(), resolve });
      this.settleCatchUps();
    });
  }

  private settleCatchUps(): void {
    if (this.catchUps.length === 0) return;
    this.catchUps = this.catchUps.filter((c) => {
      const done = this.closed || c.target.every((t, p) => this.feeds[p]!.reached(t));
      if (done) c.resolve();
      return !done;
    });
  }

  latestOffsets(): number[] {
    return this.feeds.map((f) => f.latest);
  }

  metrics(): Record<string, number> {
    return {
      offsetsLost: this.feeds.reduce((n, f) => n + f.offsetsLost, 0),
      partitionsLost: this.feeds.filter((f) => f.gone).length,
    };
  }

  /** Lists the partitions' latest offsets; true when any grew. */
  private async listLatest(): Promise<boolean> {
    if (!this.connected || this.closed) return false;
    let offsets: Map<string, number>;
    try {
      // Asked again on each try: a partition found gone meanwhile is left out.
      offsets = await this.retrying(() => this.reader.listOffsets(this.readable(), 'latest'));
    } catch (e) {
      if (this.closed) return false;
      throw this.readFailed('cannot list the latest offsets', e);
    }
    let grew = false;
    for (const f of this.feeds) {
      const offset = offsets.get(partitionKey(f.topic, f.partition));
      if (offset !== undefined && !f.gone && f.listed(offset)) grew = true;
    }
    if (grew) this.onData?.();
    return grew;
  }

  /** Micro-batch mode: lists latest offsets every `pollIntervalMs` until {@link close}. */
  startPolling(failed: (e: unknown) => void, pollIntervalMs = 100): void {
    if (!this.microBatch) return;
    const poll = () => {
      this.listLatest().then(
        () => {
          if (!this.closed) this.pollTimer = setTimeout(poll, pollIntervalMs).unref();
        },
        (e) => {
          if (!this.closed) failed(e);
        },
      );
    };
    this.pollTimer = setTimeout(poll, pollIntervalMs).unref();
  }

  /**
   * Stops reading. The connection stays until {@link dispose}: the query's last epoch commits after
   * this, and its offsets still go to the `groupId`.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.pollTimer);
    this.kick();
    this.settleCatchUps();
  }

  /**
   * The query ended: the last group commit is sent (waited for at most DISPOSE_WAIT_MS, as it may
   * be stuck on a broker that is gone), then the connections close, which ends a fetch in flight.
   */
  async dispose(): Promise<void> {
    this.close();
    const commits = this.groupOffsets?.close();
    if (commits !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([commits, new Promise((r) => (timer = setTimeout(r, DISPOSE_WAIT_MS)))]);
      clearTimeout(timer);
    }
    await this.reader.disconnect();
    await this.loops?.catch(() => {});
  }

  /** An epoch committed with the source at these offsets: with a `groupId`, they go to that group. */
  committed(offsets: readonly number[]): void {
    this.groupOffsets?.commit([...offsets]);
  }

  // --- fetching ----------------------------------------------------------------------------------

  private kick(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** One fetch loop per fetch target (a leader broker); rebuilt when leadership moves or a fetch fails. */
  private async runLoops(): Promise<void> {
    let failingSince = -1;
    let backoff = 50;
    while (!this.closed) {
      try {
        const targets = await this.reader.fetchTargets(this.readable());
        await Promise.all(
          [...targets].map(([target, parts]) =>
            this.fetchLoop(
              target,
              parts.map((r) => this.indexOf(r.topic, r.partition)),
            ),
          ),
        );
        return;
      } catch (e) {
        if (this.closed) return;
        const handled = await this.handleFetchError(e);
        if (handled) {
          failingSince = -1;
          backoff = 50;
          continue;
        }
        const now = Date.now();
        if (failingSince < 0) failingSince = now;
        if (now - failingSince > RETRY_FOR_MS) {
          this.failed(this.readFailed(`fetching failed for ${RETRY_FOR_MS / 1000} s`, e));
          return;
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(1000, backoff * 2);
        await this.reader.refreshMetadata();
      }
    }
  }

  /** The partitions still read (not gone). */
  private readable(): PartitionRef[] {
    return this.feeds.filter((f) => !f.gone).map(({ topic, partition }) => ({ topic, partition }));
  }

  /** Fetches the partitions of one fetch target until the feed closes; throws on any fetch error. */
  private async fetchLoop(target: string, parts: readonly number[]): Promise<void> {
    while (!this.closed) {
      const wanted = parts.filter((p) => this.feeds[p]!.wants(this.live));
      const ready = wanted.filter((p) => !this.feeds[p]!.blocked);
      if (ready.length === 0) {
        // Nothing asked for, or every wanted ring is full: wait for a kick or for the rings to drain.
        await new Promise<void>((resolve) => {
          const timer = wanted.length > 0 ? setTimeout(resolve, 1) : undefined;
          const prev = this.wake;
          this.wake = () => {
            clearTimeout(timer);
            prev?.();
            resolve();
          };
        });
        continue;
      }
      const fetched = await this.reader.fetch(target, {
        maxWaitMs: this.spec.fetchMaxWaitMs,
        maxBytes: this.spec.fetchMaxBytes * ready.length,
        partitions: ready.map((p) => {
          const { topic, partition, position } = this.feeds[p]!;
          return { topic, partition, offset: position, maxBytes: this.spec.fetchMaxBytes };
        }),
      });
      if (this.closed) return;
      for (const part of fetched) {
        const p = this.indexOf(part.topic, part.partition);
        if (p >= 0) this.take(p, part);
      }
    }
  }

  /** Sends a fetched partition's records (up to the next batch end in micro-batch mode). */
  private take(p: number, part: ReadPartition): void {
    const any = this.feeds[p]!.take(part, this.live);
    this.settleCatchUps();
    if (any && this.live) this.onData?.();
  }

  /** Handles what a fetch failure says about the data; false when it is worth a retry. */
  private async handleFetchError(e: unknown): Promise<boolean> {
    const failure = asReadFailure(e);
    if (failure.kind === 'out-of-range' && failure.at !== undefined) {
      await this.outOfRange(this.indexOf(failure.at.topic, failure.at.partition));
      return true;
    }
    if (failure.kind === 'unknown-topic') return this.lostPartitions.drop();
    return false;
  }

  /** The fetch offset is outside the partition's log: data lost to retention, or a recreated topic. */
  private async outOfRange(p: number): Promise<void> {
    if (p < 0) return;
    const feed = this.feeds[p]!;
    const { topic, partition } = feed;
    const list = async (at: 'earliest' | 'latest') =>
      (await this.retrying(() => this.reader.listOffsets([{ topic, partition }], at))).get(
        partitionKey(topic, partition),
      ) ?? 0;
    const earliest = await list('earliest');
    const latest = await list('latest');
    const lost = feed.outOfRange(earliest, latest);
    if (lost !== null) this.failed(lost);
    else this.settleCatchUps();
  }

  /**
   * Runs a request to the brokers again while it fails for a reason that passes (a leader moved,
   * a broker restarts, a connection dropped): metadata is refreshed between tries, with backoff
   * from 50 ms to 1 s, for at most RETRY_FOR_MS.
   */
  private async retrying<T>(request: () => Promise<T>): Promise<T> {
    const started = Date.now();
    let backoff = 50;
    for (;;) {
      try {
        return await request();
      } catch (e) {
        if (this.closed || Date.now() - started > RETRY_FOR_MS) throw e;
        if (asReadFailure(e).kind === 'unknown-topic' && (await this.lostPartitions.drop())) {
          if (this.closed) throw e;
          continue;
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(1000, backoff * 2);
        await this.reader.refreshMetadata();
      }
    }
  }

  private indexOf(topic: string, partition: number): number {
    return this.partitions.findIndex(([t, kp]) => t === topic && kp === partition);
  }

  private readFailed(what: string, cause: unknown): MillraceError {
    return readFailed(this.spec.description, this.spec.brokers, what, cause);
  }
}
