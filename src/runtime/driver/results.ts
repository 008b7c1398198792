import type { DriverRows, ProgramOutput } from '../../connectors/contract.js';
import { sinkConnector } from '../../connectors/registry.js';
import type { SinkCommit } from '../../connectors/sink-runtime.js';
import type { SinkSpec } from '../../connectors/spec.js';
import type { OutputMode } from '../../plan/output-mode.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { DoorbellTable } from '../channel/doorbell.js';
import { FrameReader } from '../channel/frame-codec.js';
import { FrameKind, SOURCE_ARG_MASK, SOURCE_WATERMARK_ARG_BEHIND } from '../channel/frame-kind.js';
import { TAG_KIND_MASK, tagArg } from '../channel/ring-layout.js';
import { RingConsumer } from '../channel/spsc-ring.js';
import type { DeadLetter, LateRow, StateReport } from '../messages.js';
import type { Wiring } from './wiring.js';

/** Dead letters kept in memory; the `deadLetter` event sees every one. */
export const DEAD_LETTER_RETENTION = 10_000;

export interface ResultEvents {
  deadLetter(letter: DeadLetter): void;
  lateRow(row: LateRow): void;
  /** Every sink partition passed the barrier of `epoch`. */
  epochAcked(epoch: number): void;
  /** A source partition reached the end of `epoch` at `offset`. */
  sourceOffset(epoch: number, source: number, partition: number, offset: number): void;
  /**
   * A source partition's own watermark at the end of `epoch` (real-time mode), and whether it had
   * input it had not read yet.
   */
  sourceWatermark(epoch: number, source: number, partition: number, watermark: number, behind: boolean): void;
  /** A stateful task's account of the end of an epoch. */
  stateReport(report: StateReport): void;
  /** A stateful task's state of `epoch` is durable. */
  stateWritten(epoch: number): void;
  /** A sink partition's report of an epoch it finished. */
  sinkCommit(commit: SinkCommit): void;
  /** A line a sink prints (the console sink). */
  consoleLine(line: string, stream: 'stdout' | 'stderr'): void;
}

/**
 * The driver's end of the hosts' result rings: rows for the sink's driver side (its connector's
 * `driverRows`: stored or printed), sink tasks' acknowledgements of markers, and dead letters.
 */
export class Results {
  /** The driver side of a sink whose rows come back to the driver (null for other sinks). */
  readonly sinkRows: DriverRows | null;
  readonly deadLetters: DeadLetter[] = [];
  /** Late rows sent to the late-row output (the newest {@link DEAD_LETTER_RETENTION}). */
  readonly lateRows: LateRow[] = [];
  private readonly readers: FrameReader[];
  /** Sink partition of each task index (-1 for tasks of other stages). */
  private readonly sinkPartition: number[];
  private readonly flushAck: number[];
  private readonly barrierAck: number[];
  private readonly ended: boolean[];
  private ackedEpoch: number;
  /** Dead letters received (the list keeps the newest {@link DEAD_LETTER_RETENTION}). */
  deadLetterCount = 0;

  constructor(
    sink: SinkSpec,
    outputMode: OutputMode,
    physical: PhysicalPlan,
    wiring: Wiring,
    bells: DoorbellTable,
    private readonly events: ResultEvents,
    /** The epoch the run resumed after: acknowledgements start above it. */
    resumedAfter = -1,
  ) {
    this.ackedEpoch = resumedAfter;
    this.readers = wiring.hosts.map((h) => new FrameReader(new RingConsumer(h.resultRing, bells)));
    const sinkStage = physical.stages[physical.sinkStage]!;
    this.sinkPartition = physical.tasks.map((t) => (t.stage === sinkStage.id ? t.partition : -1));
    this.flushAck = new Array(sinkStage.partitions).fill(0);
    this.barrierAck = new Array(sinkStage.partitions).fill(-1);
    this.ended = new Array(sinkStage.partitions).fill(false);
    this.sinkRows =
      sinkConnector(sink).driverRows?.(sink, {
        partitions: sinkStage.partitions,
        outputMode,
        resumedAfter,
        print: (line, stream) => events.consoleLine(line, stream),
      }) ?? null;
  }

  /** The rows the program reads back (`q.sink(name)`), when the sink keeps them. */
  get output(): ProgramOutput | undefined {
    return this.sinkRows?.output;
  }

  /** Handles up to `budget` frames. Returns how many it handled. */
  drain(budget: number): number {
    let n = 0;
    for (const r of this.readers) {
      const ring = r.ring;
      while (n < budget && ring.poll()) {
        this.handle(r, ring.tag & TAG_KIND_MASK, tagArg(ring.tag));
        ring.releaseDeferred();
        n++;
      }
      ring.flushRelease();
    }
    return n;
  }

  hasFrames(): boolean {
    return this.readers.some((r) => r.ring.hasFrame());
  }

  /** Highest processAllAvailable probe every sink partition has answered. */
  flushedUpTo(): number {
    let min = Number.POSITIVE_INFINITY;
    for (let p = 0; p < this.flushAck.length; p++) if (!this.ended[p]) min = Math.min(min, this.flushAck[p]!);
    return min;
  }

  /** Every sink partition has ended. */
  get allEnded(): boolean {
    return this.ended.every(Boolean);
  }

  private handle(r: FrameReader, kind: number, task: number): void {
    const partition = this.sinkPartition[task] ?? -1;
    switch (kind) {
      case FrameKind.DATA: {
        this.sinkRows?.row(partition, r.readRow());
        return;
      }
      case FrameKind.BARRIER: {
        const epoch = r.markerValue();
        this.barrierAck[partition] = epoch;
        this.sinkRows?.endEpoch?.(partition, epoch);
        let min = Number.POSITIVE_INFINITY;
        for (let p = 0; p < this.barrierAck.length; p++)
          if (!this.ended[p]) min = Math.min(min, this.barrierAck[p]!);
        if (min !== Number.POSITIVE_INFINITY && min > this.ackedEpoch) {
          for (let e = this.ackedEpoch + 1; e <= min; e++) this.events.epochAcked(e);
          this.ackedEpoch = min;
        }
        return;
      }
      case FrameKind.SOURCE_OFFSET:
        this.events.sourceOffset(r.markerValue(), task >>> 16, task & 0xffff, r.markerValue2());
        return;
      case FrameKind.SOURCE_WATERMARK: {
        const at = task & SOURCE_ARG_MASK;
        const behind = (task & SOURCE_WATERMARK_ARG_BEHIND) !== 0;
        this.events.sourceWatermark(r.markerValue(), at >>> 16, at & 0xffff, r.markerValue2(), behind);
        return;
      }
      case FrameKind.FLUSH:
        this.flushAck[partition] = Math.max(this.flushAck[partition]!, r.markerValue());
        return;
      case FrameKind.END_OF_STREAM:
        this.ended[partition] = true;
        return;
      case FrameKind.DEAD_LETTER: {
        const letter = r.readValue() as DeadLetter;
        this.deadLetterCount++;
        this.deadLetters.push(letter);
        if (this.deadLetters.length > DEAD_LETTER_RETENTION) this.deadLetters.shift();
        this.events.deadLetter(letter);
        return;
      }
      case FrameKind.SINK_COMMIT:
        this.events.sinkCommit(r.readValue() as SinkCommit);
        return;
      case FrameKind.STATE_WRITTEN:
        this.events.stateWritten(r.markerValue());
        return;
      case FrameKind.STATE_REPORT:
        this.events.stateReport(r.readValue() as StateReport);
        return;
      case FrameKind.LATE_ROW: {
        const late = r.readValue() as LateRow;
        this.lateRows.push(late);
        if (this.lateRows.length > DEAD_LETTER_RETENTION) this.lateRows.shift();
        this.events.lateRow(late);
        return;
      }
      default:
        throw new Error(`internal: unexpected frame kind ${kind} on a result ring`);
    }
  }
}
