import type { MemorySourceSpec } from '../../connectors/spec.js';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { DoorbellTable } from '../channel/doorbell.js';
import { FrameWriter } from '../channel/frame-codec.js';
import { RingProducer } from '../channel/spsc-ring.js';
import type { PreciseTime } from '../time/precise-time.js';
import type { Wiring } from './wiring.js';

/**
 * The driver's end of every source task's feed ring. Markers (epoch barriers, flush probes,
 * end-of-stream) are broadcast to all of them; memory sources also send their rows this way.
 * Writers queue what does not fit and are flushed by the driver's pump when space frees up.
 */
export class Feeds {
  readonly writers: FrameWriter[] = [];
  private readonly memory = new Map<string, MemorySourceFeed>();

  constructor(physical: PhysicalPlan, wiring: Wiring, bells: DoorbellTable, precise: PreciseTime) {
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
      if (spec.kind === 'memory') this.memory.set(spec.name, new MemorySourceFeed(spec, writers, precise));
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

  constructor(
    readonly spec: MemorySourceSpec,
    private readonly writers: FrameWriter[],
    private readonly precise: PreciseTime,
  ) {
    this.logs = writers.map(() => []);
  }

  /** Appends rows to a partition's log and sends them to its task. Returns the new end offset. */
  addData(rows: Iterable<unknown>, partition = 0): number {
    if (!Number.isInteger(partition) || partition < 0 || partition >= this.logs.length) {
      throw invalidArgument(
        `addData: source '${this.spec.name}' has ${this.logs.length} partition(s); partition ${partition} does not exist`,
      );
    }
    if (rows == null || typeof (rows as Iterable<unknown>)[Symbol.iterator] !== 'function') {
      throw invalidArgument(`addData: rows must be an array (or iterable) of rows`);
    }
    const log = this.logs[partition]!;
    const writer = this.writers[partition]!;
    for (const row of rows) {
      const offset = log.length;
      log.push(row);
      try {
        writer.writeData(row, partition, this.precise.now(), 0, offset);
      } catch (cause) {
        // The rows before it were sent; this one and the rest were not, and the log says so.
        log.pop();
        writer.publish();
        const code = cause instanceof MillraceError ? cause.code : ErrorCode.RECORD_NOT_ENCODABLE;
        throw new MillraceError(
          code,
          `addData: row ${offset} of source '${this.spec.name}' (partition ${partition}) was not added: ${(cause as Error).message}`,
          { cause },
        );
      }
    }
    writer.publish();
    return log.length;
  }

  /** Rows added so far, per partition. */
  latestOffsets(): number[] {
    return this.logs.map((l) => l.length);
  }
}
