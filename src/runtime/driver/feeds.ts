import { join } from 'node:path';
import { FilesSourceFeed } from '../../connectors/files/source-feed.js';
import { KafkaSourceFeed } from '../../connectors/kafka/source-feed.js';
import { MemorySourceFeed } from '../../connectors/memory/source-feed.js';
import type { SourceSpec } from '../../connectors/spec.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { DoorbellTable } from '../channel/doorbell.js';
import { FrameWriter } from '../channel/frame-codec.js';
import { FrameKind } from '../channel/frame-kind.js';
import { RingProducer } from '../channel/spsc-ring.js';
import type { PreciseTime } from '../time/precise-time.js';
import type { FeedCursor } from './feed-cursor.js';
import type { Wiring } from './wiring.js';

export { MemorySourceFeed };

/**
 * A source whose rows the driver reads and sends through the feed rings (memory, files, Kafka).
 * Every one sends rows only as fast as its rings take them: memory stays bounded however far the
 * source is ahead of the query.
 */
export interface DriverFeed {
  /** Real-time mode: sends every row not sent yet, and rows found later as they are found. */
  feedAll(): void;
  /** A resumed run: rows before these offsets are not sent again. */
  resumeAt(offsets: readonly number[]): void;
  /** Rows available so far, per partition. */
  latestOffsets(): number[];
  /** Called when new rows are available (micro-batch triggers react to it). */
  onData: (() => void) | undefined;
  /**
   * Ends epoch `epoch` at `end` on a partition: the rows before `end` are sent, then the `BATCH`
   * marker.
   */
  endAt(partition: number, epoch: number, end: number): void;
  /**
   * The sources whose rows the driver holds (memory, files) send them through one cursor per
   * partition, which also places the markers broadcast to them; a Kafka source has none (it
   * fetches only what its rings have room for).
   */
  readonly cursors?: readonly FeedCursor[];
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

  /** @param microBatch Kafka sources fetch only what a batch takes. */
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
      const memory = spec.kind === 'memory' ? new MemorySourceFeed(spec, writers, precise) : undefined;
      if (memory) this.memory.set(memory.spec.name, memory);
      const files = spec.kind === 'files' ? new FilesSourceFeed(spec, writers[0]!, precise) : undefined;
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

  /**
   * Sends a marker to every source task. Where the driver holds the rows (memory, files) it goes
   * after the rows sent so far — an epoch ends with what was read, the rest is the next epoch's;
   * end-of-stream leaves the rows not sent yet to the next run — except a flush probe, which
   * follows every row available now (processAllAvailable waits for them).
   */
  broadcast(kind: number, value: number): void {
    for (const s of this.sources) {
      if (s === undefined) continue;
      const cursors = s.driver?.cursors;
      if (cursors === undefined) {
        for (const w of s.writers) w.writeMarker(kind, value);
        continue;
      }
      const latest = kind === FrameKind.FLUSH ? s.driver!.latestOffsets() : [];
      for (const [p, c] of cursors.entries()) {
        if (kind === FrameKind.END_OF_STREAM) c.end(kind);
        else c.markAt(kind === FrameKind.FLUSH ? latest[p]! : c.sent, kind, value);
      }
    }
  }

  /**
   * Moves queued frames into rings, then lets the sources whose rows the driver holds send more;
   * true when nothing waits for space.
   */
  flush(): boolean {
    for (const w of this.writers) if (w.blocked) w.flush();
    for (const s of this.sources) {
      const cursors = s?.driver?.cursors;
      if (cursors === undefined) continue;
      for (const c of cursors) if (c.waiting) c.pump();
    }
    return !this.blocked;
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
        await s.files.open(dir === null ? null : join(dir, 'files'), failed);
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
   * Ends epoch `epoch` at exact offsets: each source partition reads up to its end (the driver
   * sends the rows it holds, a generator makes them) and then takes the frame as the epoch's
   * barrier.
   */
  endEpochAt(epoch: number, ends: readonly (readonly number[])[]): void {
    for (const source of this.sources) {
      if (source === undefined) continue;
      for (let p = 0; p < source.writers.length; p++) {
        const end = ends[source.index]?.[p] ?? 0;
        if (source.driver !== undefined) source.driver.endAt(p, epoch, end);
        else source.writers[p]!.writeMarker2(FrameKind.BATCH, epoch, end);
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
