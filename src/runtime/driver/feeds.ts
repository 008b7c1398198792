import type { DriverFeed, FeedMarker, ProgramInput } from '../../connectors/contract.js';
import { sourceConnector } from '../../connectors/registry.js';
import type { SourceSpec } from '../../connectors/spec.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { DoorbellTable } from '../channel/doorbell.js';
import { FrameWriter } from '../channel/frame-codec.js';
import { FrameKind } from '../channel/frame-kind.js';
import { RingProducer } from '../channel/spsc-ring.js';
import type { PreciseTime } from '../time/precise-time.js';
import { RingFeedPort } from './feed-port.js';
import type { Wiring } from './wiring.js';

/** The feed rings of one source, one writer per partition. */
export interface SourceFeeds {
  readonly index: number;
  readonly spec: SourceSpec;
  readonly writers: readonly FrameWriter[];
  /** The driver side of a source the driver reads (its connector's `feed`); undefined for rows made in the tasks. */
  readonly driver: DriverFeed | undefined;
}

/**
 * The driver's end of every source task's feed ring. Markers (epoch barriers, flush probes,
 * end-of-stream) are broadcast to all of them; sources the driver reads send their rows this way,
 * through their connector's driver side, which writes to a port per partition ({@link RingFeedPort}).
 * Writers queue what does not fit and are flushed by the driver's pump when space frees up.
 */
export class Feeds {
  readonly writers: FrameWriter[] = [];
  readonly sources: SourceFeeds[] = [];
  /** Sources the program feeds (`q.source(name)`), by name. */
  private readonly inputs = new Map<string, ProgramInput>();
  /** Sources outside the process, which the driver asks for new data. */
  private readonly external: DriverFeed[] = [];

  /** @param microBatch Sources fetching from outside fetch only what a batch takes. */
  constructor(
    physical: PhysicalPlan,
    wiring: Wiring,
    bells: DoorbellTable,
    precise: PreciseTime,
    microBatch: boolean,
  ) {
    const now = () => precise.now();
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
      const ports = writers.map((w, p) => new RingFeedPort(w, p));
      const driver = sourceConnector(spec).feed?.(spec, { ports, now, microBatch });
      if (driver?.input !== undefined) this.inputs.set(driver.input.name, driver.input);
      if (driver?.open !== undefined) this.external.push(driver);
      this.sources[input.source.index] = { index: input.source.index, spec, writers, driver };
    }
  }

  /**
   * Sends a marker to every source task. Where the driver holds the rows (its feed has cursors) it goes
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
      const marker: FeedMarker = { kind, value };
      for (const [p, c] of cursors.entries()) {
        if (kind === FrameKind.END_OF_STREAM) c.end(marker);
        else c.markAt(kind === FrameKind.FLUSH ? latest[p]! : c.sent, marker);
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

  /** A resumed run: sources the driver reads send their rows from the committed offsets on. */
  resumeAt(startOffsets: readonly (readonly number[])[]): void {
    for (const s of this.sources) s?.driver?.resumeAt(startOffsets[s.index] ?? []);
  }

  /**
   * Sources outside the process connect, read what they recorded in the checkpoint
   * (`sourceDir(sourceIndex)`, null without one) and look for data once; `failed` gets a later
   * read error of theirs.
   */
  async openExternal(
    sourceDir: (sourceIndex: number) => string | null,
    failed: (e: unknown) => void,
  ): Promise<void> {
    for (const s of this.sources) {
      if (s?.driver?.open !== undefined) await s.driver.open(sourceDir(s.index), failed);
    }
  }

  /** Sources the driver must ask for what is available. */
  get hasExternal(): boolean {
    return this.external.length > 0;
  }

  /**
   * Sources outside the process look for new data now; with `caughtUp`, each waits until its rows
   * up to what it found have been sent.
   */
  async refresh(caughtUp = false): Promise<void> {
    for (const f of this.external) await f.refresh?.(caughtUp);
  }

  /** Sources outside the process look for new data in the background, until {@link close}. */
  startPolling(failed: (e: unknown) => void): void {
    for (const f of this.external) f.startPolling?.(failed);
  }

  /** Sources stop reading. */
  close(): void {
    for (const s of this.sources) s?.driver?.close?.();
  }

  /** The run ended: sources release their connections. */
  async dispose(): Promise<void> {
    this.close();
    await Promise.all(this.sources.map((s) => s?.driver?.dispose?.()));
  }

  /** An epoch committed at these offsets (per source, per partition). */
  committed(offsets: readonly (readonly number[])[]): void {
    for (const s of this.sources) {
      const at = s === undefined ? undefined : offsets[s.index];
      if (at !== undefined) s!.driver?.committed?.(at);
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

  /** Real-time mode: sources the driver reads send what they hold, and then rows as they come. */
  feedAll(): void {
    for (const s of this.sources) s?.driver?.feedAll();
  }

  /** The source named `name` that the program feeds. */
  input(name: string): ProgramInput | undefined {
    return this.inputs.get(name);
  }

  /** Every source the program feeds. */
  inputSources(): IterableIterator<ProgramInput> {
    return this.inputs.values();
  }
}
