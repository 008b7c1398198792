import type { Admin, Kafka } from 'kafkajs';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { FrameWriter } from '../../runtime/channel/frame-codec.js';
import { FrameKind } from '../../runtime/channel/frame-kind.js';
import type { PreciseTime } from '../../runtime/time/precise-time.js';
import type { KafkaSourceSpec } from '../spec.js';
import {
  Batch,
  type FetchedPartition,
  type InternalCluster,
  internalCluster,
  kafkaClient,
  READ_COMMITTED,
  READ_UNCOMMITTED,
} from './client.js';
import { headersOf } from './codec.js';
import { GroupOffsets } from './group-offsets.js';
import type { TopicPartition } from './layout.js';
import type { RawKafkaRecord } from './source.js';

/** How long the end of a query waits for its last group commit. */
const DISPOSE_WAIT_MS = 5000;

/** Consecutive failed fetches are retried (backoff up to 1 s) for this long, then the query fails. */
const RETRY_FOR_MS = 30_000;

/** An epoch's end at one partition: write `BATCH(epoch, end)` once the rows before `end` are written. */
interface PendingEnd {
  readonly epoch: number;
  readonly end: number;
}

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
 * Offsets are Kafka offsets. Transaction markers and (under `read_committed`) aborted records
 * take offsets but are never sent, so an epoch may end at an offset no row has.
 */
export class KafkaSourceFeed {
  onData: (() => void) | undefined;
  private readonly partitions: readonly TopicPartition[];
  /** Next offset to fetch, per source partition. */
  private readonly position: number[];
  /** Latest offset known (high watermark, or last stable offset under read_committed). */
  private readonly latest: number[];
  private readonly ends: PendingEnd[][];
  /** Partitions whose topic was deleted (read no more). */
  private readonly gone: boolean[];
  private readonly kafka: Kafka;
  private cluster: InternalCluster | null = null;
  private live = false;
  private closed = false;
  private failed: (e: unknown) => void = () => {};
  /** Wakes fetch loops waiting for work. */
  private wake: (() => void) | null = null;
  private loops: Promise<void> | null = null;
  private pollTimer: NodeJS.Timeout | undefined;
  private offsetsLost = 0;
  private readonly groupOffsets: GroupOffsets | null;
  private admin: Promise<Admin> | null = null;
  /** `caughtUp` calls waiting for positions to reach their targets. */
  private catchUps: { target: number[]; resolve: () => void }[] = [];

  constructor(
    readonly spec: KafkaSourceSpec,
    private readonly writers: readonly FrameWriter[],
    private readonly precise: PreciseTime,
    private readonly microBatch: boolean,
  ) {
    this.partitions = spec.topicPartitions ?? [];
    this.position = this.partitions.map(() => 0);
    this.latest = this.partitions.map(() => 0);
    this.ends = this.partitions.map(() => []);
    this.gone = this.partitions.map(() => false);
    this.kafka = kafkaClient(spec.brokers, spec.client);
    this.groupOffsets =
      spec.groupId === undefined ? null : new GroupOffsets(spec.groupId, this.partitions, () => this.cluster);
  }

  /** Connects to the brokers and starts the fetch loops (idle until there is something to fetch). */
  async open(failed: (e: unknown) => void): Promise<void> {
    // A read failure ends the feed: nothing more is fetched, nothing waits for it.
    this.failed = (e) => {
      if (this.closed) return;
      this.close();
      failed(e);
    };
    const isolation = this.spec.isolationLevel === 'read_committed' ? READ_COMMITTED : READ_UNCOMMITTED;
    const cluster = internalCluster(this.kafka, isolation);
    try {
      await cluster.connect();
      await cluster.addMultipleTargetTopics([...new Set(this.partitions.map(([t]) => t))]);
    } catch (e) {
      await cluster.disconnect().catch(() => {});
      throw this.readFailed('cannot connect', e);
    }
    this.cluster = cluster;
    if (this.closed) return;
    this.loops = this.runLoops();
  }

  /** A resumed run (and every first run: the starting offsets): fetching starts at these offsets. */
  resumeAt(offsets: readonly number[]): void {
    for (let p = 0; p < this.position.length; p++) {
      this.position[p] = Math.max(this.position[p]!, offsets[p] ?? 0);
      this.latest[p] = Math.max(this.latest[p]!, this.position[p]!);
    }
  }

  /** Real-time mode: from now on every partition is fetched as records arrive. */
  feedAll(): void {
    if (this.microBatch || this.closed) return;
    this.live = true;
    this.kick();
  }

  /** Not used: a Kafka source's rows are fetched, then sent (see {@link endAt}). */
  feed(_partition: number, _upTo: number): void {}

  /** Ends epoch `epoch` at `end` on a partition: its marker follows the rows before `end`. */
  endAt(partition: number, epoch: number, end: number): void {
    this.ends[partition]!.push({ epoch, end });
    this.writeDueEnds(partition);
    this.kick();
  }

  /**
   * Resolves once every partition's rows up to its latest known offset have been sent (real-time
   * mode; `processAllAvailable` waits for it before its probe follows the rows).
   */
  caughtUp(): Promise<void> {
    if (this.microBatch || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.catchUps.push({ target: [...this.latest], resolve });
      this.settleCatchUps();
    });
  }

  private settleCatchUps(): void {
    if (this.catchUps.length === 0) return;
    this.catchUps = this.catchUps.filter((c) => {
      const done = this.closed || c.target.every((t, p) => this.gone[p] || this.position[p]! >= t);
      if (done) c.resolve();
      return !done;
    });
  }

  latestOffsets(): number[] {
    return [...this.latest];
  }

  metrics(): Record<string, number> {
    return { offsetsLost: this.offsetsLost, partitionsLost: this.gone.filter((g) => g).length };
  }

  /** Lists the partitions' latest offsets; true when any grew. */
  async refresh(): Promise<boolean> {
    const cluster = this.cluster;
    if (cluster === null || this.closed) return false;
    // Asked again on each try: a partition found gone meanwhile is left out.
    const request = () => {
      const byTopic = new Map<string, { partition: number }[]>();
      this.partitions.forEach(([t, kp], p) => {
        if (this.gone[p]) return;
        if (!byTopic.has(t)) byTopic.set(t, []);
        byTopic.get(t)!.push({ partition: kp });
      });
      return cluster.fetchTopicsOffset(
        [...byTopic].map(([topic, partitions]) => ({ topic, partitions, fromBeginning: false })),
      );
    };
    let offsets: Awaited<ReturnType<InternalCluster['fetchTopicsOffset']>>;
    try {
      offsets = await this.retrying(request);
    } catch (e) {
      if (this.closed) return false;
      throw this.readFailed('cannot list the latest offsets', e);
    }
    let grew = false;
    for (const t of offsets) {
      for (const { partition, offset } of t.partitions) {
        const p = this.indexOf(t.topic, partition);
        if (p >= 0 && Number(offset) > this.latest[p]!) {
          this.latest[p] = Number(offset);
          grew = true;
        }
      }
    }
    if (grew) this.onData?.();
    return grew;
  }

  /** Micro-batch mode: lists latest offsets every `pollIntervalMs` until {@link close}. */
  startPolling(failed: (e: unknown) => void, pollIntervalMs = 100): void {
    if (!this.microBatch) return;
    const poll = () => {
      this.refresh().then(
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
    await this.cluster?.disconnect().catch(() => {});
    await this.loops?.catch(() => {});
    await (await this.admin?.catch(() => null))?.disconnect().catch(() => {});
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

  private wants(p: number): boolean {
    if (this.gone[p]) return false;
    const next = this.ends[p]![0];
    return this.live || (next !== undefined && this.position[p]! < next.end);
  }

  /** One fetch loop per leader broker; they are rebuilt when leadership moves or a fetch fails. */
  private async runLoops(): Promise<void> {
    let failingSince = -1;
    let backoff = 50;
    while (!this.closed) {
      try {
        const leaders = this.leaders();
        await Promise.all([...leaders].map(([node, parts]) => this.fetchLoop(node, parts)));
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
        await this.cluster?.refreshMetadata().catch(() => {});
      }
    }
  }

  private leaders(): Map<string, number[]> {
    const out = new Map<string, number[]>();
    const byTopic = new Map<string, number[]>();
    this.partitions.forEach(([t], p) => {
      if (this.gone[p]) return;
      if (!byTopic.has(t)) byTopic.set(t, []);
      byTopic.get(t)!.push(p);
    });
    for (const [topic, ps] of byTopic) {
      const leaders = this.cluster!.findLeaderForPartitions(
        topic,
        ps.map((p) => this.partitions[p]![1]),
      );
      for (const [node, kafkaPartitions] of Object.entries(leaders)) {
        if (!out.has(node)) out.set(node, []);
        for (const kp of kafkaPartitions) out.get(node)!.push(this.indexOf(topic, kp));
      }
    }
    return out;
  }

  /** Fetches the partitions one broker leads until the feed closes; throws on any fetch error. */
  private async fetchLoop(node: string, parts: readonly number[]): Promise<void> {
    const broker = await this.cluster!.findBroker({ nodeId: node });
    while (!this.closed) {
      const wanted = parts.filter((p) => this.wants(p));
      const ready = wanted.filter((p) => !this.writers[p]!.blocked);
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
      const topics = new Map<string, { partition: number; fetchOffset: string; maxBytes: number }[]>();
      for (const p of ready) {
        const [topic, partition] = this.partitions[p]!;
        if (!topics.has(topic)) topics.set(topic, []);
        topics
          .get(topic)!
          .push({ partition, fetchOffset: String(this.position[p]), maxBytes: this.spec.fetchMaxBytes });
      }
      const response = await broker.fetch({
        replicaId: -1,
        isolationLevel: this.spec.isolationLevel === 'read_committed' ? READ_COMMITTED : READ_UNCOMMITTED,
        maxWaitTime: this.spec.fetchMaxWaitMs,
        minBytes: 1,
        maxBytes: this.spec.fetchMaxBytes * ready.length,
        topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
      });
      if (this.closed) return;
      for (const t of response.responses) {
        for (const part of t.partitions) {
          const p = this.indexOf(t.topicName, part.partition);
          if (p >= 0) this.take(p, t.topicName, part);
        }
      }
    }
  }

  /** Sends a fetched partition's records (up to the next batch end in micro-batch mode). */
  private take(p: number, topic: string, part: FetchedPartition): void {
    const from = this.position[p]!;
    const batch = new Batch(topic, String(from), part);
    const writer = this.writers[p]!;
    const stable = Number(
      this.spec.isolationLevel === 'read_committed'
        ? (part.lastStableOffset ?? part.highWatermark)
        : part.highWatermark,
    );
    if (stable > this.latest[p]!) this.latest[p] = stable;
    // Micro-batch: rows at or past the batch's end belong to the next batch, fetched again then.
    const limit = this.live ? Number.POSITIVE_INFINITY : (this.ends[p]![0]?.end ?? from);
    let next = batch.isEmptyIncludingFiltered() ? from : Number(batch.lastOffset()) + 1;
    if (next > limit) next = limit;
    const now = this.precise.now();
    for (const m of batch.messages) {
      const offset = Number(m.offset);
      if (offset >= limit) break;
      this.writeEndsBefore(p, offset);
      const raw: RawKafkaRecord = {
        key: m.key,
        value: m.value,
        topic,
        partition: part.partition,
        offset,
        timestamp: Number(m.timestamp),
        headers: headersOf(m.headers),
      };
      try {
        writer.writeData(raw, p, Number(m.timestamp), now, offset);
      } catch (cause) {
        writer.publish();
        this.position[p] = offset;
        throw new MillraceError(
          cause instanceof MillraceError ? cause.code : ErrorCode.RECORD_NOT_ENCODABLE,
          `${this.spec.description}: the record at ${topic}-${part.partition} offset ${offset} cannot be sent: ${(cause as Error).message}`,
          { cause },
        );
      }
    }
    // Offsets up to the stable end hold nothing readable when the fetch came back empty (compacted
    // or filtered away): a batch ending there is complete.
    const end = this.ends[p]![0]?.end;
    if (batch.isEmptyIncludingFiltered() && end !== undefined && stable >= end && next < end) next = end;
    this.position[p] = Math.max(from, next);
    this.writeDueEnds(p);
    writer.publish();
    this.settleCatchUps();
    if (batch.messages.length > 0 && this.live) this.onData?.();
  }

  /** Writes the markers of batches that end at or before `offset` (a row at `offset` follows them). */
  private writeEndsBefore(p: number, offset: number): void {
    const ends = this.ends[p]!;
    while (ends.length > 0 && ends[0]!.end <= offset) {
      const e = ends.shift()!;
      this.writers[p]!.writeMarker2(FrameKind.BATCH, e.epoch, e.end);
    }
  }

  /** Writes the markers of batches whose rows have all been sent. */
  private writeDueEnds(p: number): void {
    const ends = this.ends[p]!;
    let wrote = false;
    while (ends.length > 0 && (ends[0]!.end <= this.position[p]! || this.gone[p])) {
      const e = ends.shift()!;
      this.writers[p]!.writeMarker2(FrameKind.BATCH, e.epoch, e.end);
      wrote = true;
    }
    if (wrote) this.writers[p]!.publish();
  }

  /** Handles what a fetch failure says about the data; false when it is worth a retry. */
  private async handleFetchError(e: unknown): Promise<boolean> {
    const err = e as { name?: string; type?: string; topic?: string; partition?: number };
    if (err.name === 'KafkaJSOffsetOutOfRange' && err.topic !== undefined && err.partition !== undefined) {
      await this.outOfRange(this.indexOf(err.topic, err.partition));
      return true;
    }
    if (err.type === 'UNKNOWN_TOPIC_OR_PARTITION') return this.dropLostPartitions();
    return false;
  }

  /**
   * Partitions the brokers no longer have (a deleted topic) fail the query under
   * `failOnDataLoss`, or are read no more and counted. False when none is missing.
   */
  private async dropLostPartitions(): Promise<boolean> {
    const existing = await this.existingPartitions();
    if (existing === null) return false;
    const missing = this.partitions
      .map((tp, p) => ({ tp, p }))
      .filter(({ tp: [t, kp], p }) => !this.gone[p] && !existing.has(`${t}\u0000${kp}`));
    if (missing.length === 0) return false;
    const list = missing.map(({ tp: [t, kp] }) => `${t}-${kp}`).join(', ');
    if (this.spec.failOnDataLoss) {
      this.failed(
        new MillraceError(
          ErrorCode.SOURCE_DATA_LOST,
          `${this.spec.description}: ${list} no longer exist${missing.length > 1 ? '' : 's'} (topic deleted?); ` +
            'set failOnDataLoss: false to go on without them',
        ),
      );
      return true;
    }
    for (const { p } of missing) {
      this.gone[p] = true;
      this.writeDueEnds(p);
    }
    // kafkajs keeps asking for the metadata of every topic it was told of; a deleted one would
    // fail each refresh.
    const targets = (this.cluster as unknown as { targetTopics?: Set<string> }).targetTopics;
    for (const t of new Set(missing.map(({ tp: [topic] }) => topic))) {
      if (this.partitions.every(([pt], p) => pt !== t || this.gone[p])) targets?.delete(t);
    }
    this.settleCatchUps();
    return true;
  }

  /** Every topic-partition the brokers know now (null when they cannot be asked). */
  private async existingPartitions(): Promise<Set<string> | null> {
    try {
      const admin = await this.adminClient();
      const names = new Set(await admin.listTopics());
      const wanted = [...new Set(this.partitions.map(([t]) => t))].filter((t) => names.has(t));
      const out = new Set<string>();
      if (wanted.length === 0) return out;
      for (const t of (await admin.fetchTopicMetadata({ topics: wanted })).topics) {
        for (const p of t.partitions) out.add(`${t.name}\u0000${p.partitionId}`);
      }
      return out;
    } catch {
      return null;
    }
  }

  private adminClient(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })();
    return this.admin;
  }

  /** The fetch offset is outside the partition's log: data lost to retention, or a recreated topic. */
  private async outOfRange(p: number): Promise<void> {
    if (p < 0) return;
    const [topic, partition] = this.partitions[p]!;
    const list = async (fromBeginning: boolean) =>
      Number(
        (
          await this.retrying(() =>
            this.cluster!.fetchTopicsOffset([{ topic, partitions: [{ partition }], fromBeginning }]),
          )
        )[0]!.partitions[0]!.offset,
      );
    const earliest = await list(true);
    const latest = await list(false);
    const at = this.position[p]!;
    const lost =
      at < earliest ? `offsets ${at} to ${earliest - 1}` : `offset ${at} (the log now ends at ${latest})`;
    if (this.spec.failOnDataLoss) {
      this.failed(
        new MillraceError(
          ErrorCode.SOURCE_DATA_LOST,
          `${this.spec.description}: ${topic}-${partition} ${lost} no longer exist (deleted by retention, or the ` +
            'topic was recreated); set failOnDataLoss: false to skip them',
        ),
      );
      return;
    }
    const to = at < earliest ? earliest : latest;
    if (to > at) this.offsetsLost += to - at;
    this.position[p] = to;
    this.writeDueEnds(p);
    this.settleCatchUps();
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
        if (
          (e as { type?: string }).type === 'UNKNOWN_TOPIC_OR_PARTITION' &&
          (await this.dropLostPartitions())
        ) {
          if (this.closed) throw e;
          continue;
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(1000, backoff * 2);
        await this.cluster?.refreshMetadata().catch(() => {});
      }
    }
  }

  private indexOf(topic: string, partition: number): number {
    return this.partitions.findIndex(([t, kp]) => t === topic && kp === partition);
  }

  private readFailed(what: string, cause: unknown): MillraceError {
    return new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `${this.spec.description}: ${what} (${this.spec.brokers.join(',')}): ${(cause as Error).message}`,
      { cause },
    );
  }
}
