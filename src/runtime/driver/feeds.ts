import { join } from 'node:path';
import { FilesSourceFeed } from '../../connectors/files/source-feed.js';
import { KafkaSourceFeed } from '../../connectors/kafka/source-feed.js';
import type { MemorySourceSpec, SourceSpec } from '../../connectors/spec.js';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { DoorbellTable } from '../channel/doorbell.js';
import { FrameWriter } from '../channel/frame-codec.js';
import { FrameKind } from '../channel/frame-kind.js';
import { RingProducer } from '../channel/spsc-ring.js';
import type { PreciseTime } from '../time/precise-time.js';
import type { Wiring } from './wiring.js';

/** A source whose rows the driver reads and sends through the feed rings (memory, files). */
export interface DriverFeed {
  /** Sends a partition's rows up to offset `upTo` (exclusive). */
  feed(partition: number, upTo: number): void;
  /** Real-time mode: sends every row not sent yet. */
  feedAll(): void;
  /** A resumed run: rows before these offsets are not sent again. */
  resumeAt(offsets: readonly number[]): void;
  /** Rows available so far, per partition. */
  latestOffsets(): number[];
  /** Called when new rows are available (micro-batch triggers react to it). */
  onData: (() => void) | undefined;
  /**
   * Ends epoch `epoch` at `end` on a partition, writing the `BATCH` marker itself once the rows
   * before `end` are sent (a source whose rows arrive asynchronously); without it the rows are
   * fed at once and the marker follows.
   */
  endAt?(partition: number, epoch: number, end: number): void;
  /** Source-specific counters for progress (`sources[].metrics`). */
  metrics?(): Record<string, number>;
}

/** The feed rings of one source, one writer per partition. */
export interface SourceFeeds {
  readonly index: number;
  readonly spec: SourceSpec;
  readonly writers: readonly FrameWriter[];
  /** The driver side of a memory or files source; undefined for generated sources. */
  readonly driver: DriverFeed | undefined;
  /** The driver side of a memory source (its log). */
  readonly memory: MemorySourceFeed | undefined;
  readonly files: FilesSourceFeed | undefined;
  readonly kafka: KafkaSourceFeed | undefined;
}

/**
 * The driver's end of every source task's feed ring. Markers (epoch barriers, flush probes,
 * end-of-stream) are broadcast to all of them; memory sources also send their rows this way.
 * Writers queue what does not fit and are flushed by the driver's pump when space frees up.
 */
export class Feeds {
  readonly writers: FrameWriter[] = [];
  readonly sources: SourceFeeds[] = [];
  private readonly memory = new Map<string, MemorySourceFeed>();
  private readonly files: FilesSourceFeed[] = [];
  private readonly kafka: KafkaSourceFeed[] = [];

  /** @param microBatch memory rows wait in their log until a batch takes them. */
  constructor(
    physical: PhysicalPlan,
    wiring: Wiring,
    bells: DoorbellTable,
    precise: PreciseTime,
    microBatch: boolean,
  ) {
    for (const stage of physical.stages) {
      const input = stage.inputs[0];
      if (input?.kind !== 'source') continue;
      const first = physical.tasks.findIndex((t) => t.stage === stage.id);
      const writers: FrameWriter[] = [];
      for (let p = 0; p < stage.partitions; p++) {
        const w = new FrameWriter(new RingProducer(wiring.feeds.get(first + p)!, bells));
        writers.push(w);
        this.writers.push(w);
      }
      const spec = input.source.spec;
      const memory =
        spec.kind === 'memory' ? new MemorySourceFeed(spec, writers, precise, microBatch) : undefined;
      if (memory) this.memory.set(memory.spec.name, memory);
      const files =
        spec.kind === 'files' ? new FilesSourceFeed(spec, writers[0]!, precise, microBatch) : undefined;
      if (files) this.files.push(files);
      const kafka =
        spec.kind === 'kafka' ? new KafkaSourceFeed(spec, writers, precise, microBatch) : undefined;
      if (kafka) this.kafka.push(kafka);
      const driver = memory ?? files ?? kafka;
      this.sources[input.source.index] = {
        index: input.source.index,
        spec,
        writers,
        driver,
        memory,
        files,
        kafka,
      };
    }
  }

  /** Sends a marker to every source task, after everything already sent. */
  broadcast(kind: number, value: number): void {
    for (const w of this.writers) w.writeMarker(kind, value);
  }

  /** Moves queued frames into rings; true when nothing waits. */
  flush(): boolean {
    let clear = true;
    for (const w of this.writers) if (w.blocked && !w.flush()) clear = false;
    return clear;
  }

  get blocked(): boolean {
    return this.writers.some((w) => w.blocked);
  }

  /** A resumed run: memory sources send their rows from the committed offsets on. */
  resumeAt(startOffsets: readonly (readonly number[])[]): void {
    for (const s of this.sources) s?.driver?.resumeAt(startOffsets[s.index] ?? []);
  }

  /**
   * Files sources read the files their checkpoint lists (in `sourceDir(sourceIndex)`, null without
   * a checkpoint) from the resume offsets on, then look for new files once. Kafka sources connect
   * and list their latest offsets; `failed` gets a later read error of theirs.
   */
  async openExternal(
    sourceDir: (sourceIndex: number) => string | null,
    failed: (e: unknown) => void,
  ): Promise<void> {
    for (const s of this.sources) {
      if (s?.files !== undefined) {
        const dir = sourceDir(s.index);
        await s.files.open(dir === null ? null : join(dir, 'files'));
        await s.files.refresh();
      }
      if (s?.kafka !== undefined) {
        await s.kafka.open(failed);
        await s.kafka.refresh();
      }
    }
  }

  /** Sources the driver must ask for what is available (files, Kafka). */
  get hasExternal(): boolean {
    return this.files.length > 0 || this.kafka.length > 0;
  }

  /**
   * Files sources look for new files now (in real-time mode their rows are sent at once); Kafka
   * sources list their latest offsets and, with `caughtUp`, wait until their rows up to them
   * have been sent.
   */
  async refresh(caughtUp = false): Promise<void> {
    for (const f of this.files) await f.refresh();
    for (const k of this.kafka) {
      await k.refresh();
      if (caughtUp) await k.caughtUp();
    }
  }

  /** Files sources list their directories, Kafka sources (micro-batch) their offsets, until {@link close}. */
  startPolling(failed: (e: unknown) => void): void {
    for (const f of this.files) f.startPolling(failed);
    for (const k of this.kafka) k.startPolling(failed);
  }

  /** Sources stop reading (files stop polling, Kafka sources fetching). */
  close(): void {
    for (const f of this.files) f.close();
    for (const k of this.kafka) k.close();
  }

  /** The run ended: Kafka sources send their last group commit and close their connections. */
  async dispose(): Promise<void> {
    this.close();
    await Promise.all(this.kafka.map((k) => k.dispose()));
  }

  /** An epoch committed at these offsets (per source, per partition): Kafka sources with a `groupId` commit them there. */
  committed(offsets: readonly (readonly number[])[]): void {
    for (const k of this.kafka) {
      const s = this.sources.find((x) => x?.kafka === k);
      if (s !== undefined && offsets[s.index] !== undefined) k.committed(offsets[s.index]!);
    }
  }

  /**
   * Ends epoch `epoch` at exact offsets: each source partition reads up to its end (memory rows
   * are sent, a generator makes them) and then takes the frame as the epoch's barrier.
   */
  endEpochAt(epoch: number, ends: readonly (readonly number[])[]): void {
    for (const source of this.sources) {
      if (source === undefined) continue;
      for (let p = 0; p < source.writers.length; p++) {
        const end = ends[source.index]?.[p] ?? 0;
        if (source.driver?.endAt !== undefined) {
          source.driver.endAt(p, epoch, end);
          continue;
        }
        source.driver?.feed(p, end);
        source.writers[p]!.writeMarker2(FrameKind.BATCH, epoch, end);
      }
    }
  }

  /** Real-time mode: sends what memory and files sources hold (their rows at start). */
  feedAll(): void {
    for (const s of this.sources) s?.driver?.feedAll();
  }

  memorySource(name: string): MemorySourceFeed | undefined {
    return this.memory.get(name);
  }

  memorySources(): IterableIterator<MemorySourceFeed> {
    return this.memory.values();
  }
}

/** The test's handle on a memory source: a replayable log per partition. */
export class MemorySourceFeed {
  private readonly logs: unknown[][];
  /** Rows of each partition already sent to its task. */
  private readonly fed: number[];
  private readonly addedAt: number[][];
  /** Called after rows are added (micro-batch triggers react to new data). */
  onData: (() => void) | undefined;

  constructor(
    readonly spec: MemorySourceSpec,
    private readonly writers: FrameWriter[],
    private readonly precise: PreciseTime,
    private readonly microBatch: boolean,
  ) {
    this.logs = writers.map(() => []);
    this.fed = writers.map(() => 0);
    this.addedAt = writers.map(() => []);
  }

  /**
   * Appends rows to a partition's log. In real-time mode they go to its task at once; in
   * micro-batch mode the next batch takes them. Returns the new end offset.
   */
  addData(rows: Iterable<unknown>, partition = 0): number {
    this.checkArgs(rows, partition);
    const log = this.logs[partition]!;
    const now = this.precise.now();
    for (const row of rows) {
      log.push(row);
      this.addedAt[partition]!.push(now);
    }
    if (!this.microBatch) this.feed(partition, log.length);
    this.onData?.();
    return log.length;
  }

  private checkArgs(rows: Iterable<unknown>, partition: number): void {
    if (!Number.isInteger(partition) || partition < 0 || partition >= this.logs.length) {
      throw invalidArgument(
        `addData: source '${this.spec.name}' has ${this.logs.length} partition(s); partition ${partition} does not exist`,
      );
    }
    if (rows == null || typeof (rows as Iterable<unknown>)[Symbol.iterator] !== 'function') {
      throw invalidArgument(`addData: rows must be an array (or iterable) of rows`);
    }
  }

  /** Sends rows `[fed, end)` of a partition to its task. */
  feed(partition: number, upTo: number): void {
    const log = this.logs[partition]!;
    const writer = this.writers[partition]!;
    // A log that was not handed over from an earlier run holds fewer rows than that run read.
    const end = Math.min(upTo, log.length);
    for (let offset = this.fed[partition]!; offset < end; offset++) {
      try {
        writer.writeData(log[offset], partition, this.addedAt[partition]![offset]!, 0, offset);
      } catch (cause) {
        // The rows before it were sent; this one and the rest were not, and the log says so.
        log.length = offset;
        this.addedAt[partition]!.length = offset;
        writer.publish();
        this.fed[partition] = offset;
        const code = cause instanceof MillraceError ? cause.code : ErrorCode.RECORD_NOT_ENCODABLE;
        throw new MillraceError(
          code,
          `addData: row ${offset} of source '${this.spec.name}' (partition ${partition}) was not added: ${(cause as Error).message}`,
          { cause },
        );
      }
    }
    if (end > this.fed[partition]!) this.fed[partition] = end;
    writer.publish();
  }

  /**
   * Appends rows to a partition's log without sending them (rows a query starts with). Before
   * {@link resumeAt}, they are the log from offset 0.
   */
  preload(rows: Iterable<unknown>, partition = 0): void {
    this.checkArgs(rows, partition);
    const now = this.precise.now();
    for (const row of rows) {
      this.logs[partition]!.push(row);
      this.addedAt[partition]!.push(now);
    }
  }

  /**
   * A resumed run: rows before these offsets were processed by an earlier run and are not sent
   * again. Where the log holds fewer rows than that (an earlier run's rows were not handed to
   * this one), the rows added next take the offsets after the committed ones.
   */
  resumeAt(offsets: readonly number[]): void {
    for (let p = 0; p < this.fed.length; p++) {
      const at = offsets[p] ?? 0;
      if (this.logs[p]!.length < at) {
        this.logs[p]!.length = at;
        this.addedAt[p]!.length = at;
      }
      this.fed[p] = Math.max(this.fed[p]!, at);
    }
  }

  /** Real-time mode: sends every row of the log not sent yet. */
  feedAll(): void {
    for (let p = 0; p < this.logs.length; p++) this.feed(p, this.logs[p]!.length);
  }

  /** Every partition's log so far (a resumed run can be handed them; rows before a resume point may be holes). */
  snapshot(): unknown[][] {
    return this.logs.map((l) => Array.from(l));
  }

  /** Rows added so far, per partition. */
  latestOffsets(): number[] {
    return this.logs.map((l) => l.length);
  }
}
