import type { BadSourceRecord, GeneratedRows, TaskDecoder } from '../../connectors/contract.js';
import { sourceConnector } from '../../connectors/registry.js';
import { GeneratorSchedule } from '../../connectors/schedule.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { OperatorRef, RowSink } from '../../operators/contract.js';
import type { PlannedOperator } from '../../plan/analyze.js';
import type { StageInput } from '../../plan/physical.js';
import { DATA_ARG_BAD_RECORD } from '../channel/frame-kind.js';
import type { HostContext } from './host-context.js';
import type { RowMeta } from './row-meta.js';

/** What a {@link TaskSource} needs of its task. */
export interface SourceTask {
  readonly partition: number;
  readonly meta: RowMeta;
  rowsIn: number;
  badRecord(op: OperatorRef, row: unknown, error: unknown, userCode?: boolean): void;
  waitFor(p: PromiseLike<unknown>): void;
  /** A watermark the source carries (see TaskDecoder.watermark). */
  advanceWatermark(input: number, value: number): void;
  /** Whether the task must stop handing rows on for now (it waits on a promise, or its output is full). */
  stalled(): boolean;
}

/**
 * Where a source task's rows come from, and how far it has read: a generated source (its
 * connector's `generated`) makes its rows in the task, on the schedule the driver started; a source
 * with a `decoder` sends what it read (a broker's record, as bytes) through the task's input ring
 * to be decoded here, in the worker; other sources' rows arrive in the ring as they are.
 */
export class TaskSource {
  readonly index: number;
  readonly op: PlannedOperator;
  /** The source as its errors name it. */
  private readonly description: string;
  /** Next offset of this source partition: the task's position. */
  offset: number;
  /** A generated source makes no row at or past this offset (the end of an epoch it redoes) yet. */
  private holdAt: number;
  /** Rows read or made. */
  rows = 0;
  /** Set once the query's clock has started (generated sources only). */
  private schedule: GeneratorSchedule | null = null;
  private readonly generator: GeneratedRows | null;
  private readonly generate: GeneratedRows['generate'] | null;
  /** What decodes the rows of a source that sends them encoded (null: rows arrive as they are). */
  private readonly decoder: TaskDecoder | null;
  /**
   * A source the driver feeds: whether its feed last said the partition has input not sent yet
   * (`SOURCE_BACKLOG`). Behind until it says otherwise, so a partition not heard from holds the
   * watermark back.
   */
  private fedBehind = true;

  constructor(
    private readonly task: SourceTask,
    private readonly host: HostContext,
    input: Extract<StageInput, { kind: 'source' }>,
    op: PlannedOperator,
    startOffset: number,
    redoEnd = Number.POSITIVE_INFINITY,
    /** The watermark input of a `withWatermark` reading this source directly, or null. */
    private readonly watermarkInput: number | null = null,
  ) {
    this.holdAt = redoEnd;
    this.index = input.source.index;
    this.description = input.source.spec.description;
    this.op = op;
    this.offset = startOffset;
    const s = input.source.spec;
    const connector = sourceConnector(s);
    this.generator = connector.generated?.(s) ?? null;
    this.generate = this.generator?.generate ?? null;
    this.decoder = connector.decoder?.(s, host.onBadRecord) ?? null;
  }

  /** Whether the task makes this source's rows: a generated source, its clock started. */
  get generating(): boolean {
    return this.schedule !== null;
  }

  /**
   * Whether the partition has input the task has not read yet: generated rows due by `now` (the
   * ones an epoch being redone holds back included), or what the driver's feed last said.
   */
  behind(now: number): boolean {
    if (this.generator === null) return this.fedBehind;
    return this.schedule === null || this.schedule.dueTime(this.offset) <= now;
  }

  /** The driver's feed says whether the partition has input not sent yet. */
  fed(behind: boolean): void {
    this.fedBehind = behind;
  }

  /** A generated source whose clock has not started yet. */
  get unstarted(): boolean {
    return this.generator !== null && this.schedule === null;
  }

  /** The query's clock started at `startTime`: a generated source schedules its rows from it. */
  start(startTime: number): void {
    if (this.generator === null) return;
    const origin = this.host.scheduleStarts[this.index] ?? startTime;
    this.schedule = new GeneratorSchedule(this.generator, origin);
  }

  /** A data frame of the task's input ring was read: sets the row's metadata. */
  read(m: RowMeta): void {
    m.readTime = this.host.precise.now();
    m.sourceIndex = this.index;
    m.sourcePartition = this.task.partition;
    this.rows++;
    this.offset = m.origin + 1;
  }

  /**
   * Hands a row read from the ring on: decoded first, or made a bad record, when the source sends
   * rows encoded; a record the source could not read (`arg` flagged) goes to the query's
   * bad-record policy.
   */
  push(head: RowSink, row: unknown, arg: number): void {
    if ((arg & DATA_ARG_BAD_RECORD) !== 0) {
      this.badSourceRecord(row as BadSourceRecord);
      return;
    }
    const decoder = this.decoder;
    if (decoder === null) {
      head.push(row);
      return;
    }
    let decoded: unknown;
    try {
      const w = decoder.watermark?.(row, this.host.passNow());
      if (w !== undefined) {
        // A watermark record moves the position, and is no row read.
        this.rows--;
        this.task.rowsIn--;
        if (this.watermarkInput !== null) this.task.advanceWatermark(this.watermarkInput, w);
        return;
      }
      decoded = decoder.decode(row);
    } catch (e) {
      this.task.badRecord(this.op, row, e);
      // The task reads on once the dead letter is where the source sends them.
      if (decoder.deadLetter !== undefined) this.task.waitFor(decoder.deadLetter(row, e));
      return;
    }
    head.push(decoded);
  }

  /** A record that is no row (a line of a file): its text is the bad record, where it was is in the error. */
  private badSourceRecord(bad: BadSourceRecord): void {
    const where = bad.line > 0 ? `${bad.file}, line ${bad.line}` : bad.file;
    const error = new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `${this.description}: ${where}: ${bad.reason}`,
    );
    this.task.badRecord(this.op, bad.text, error, false);
  }

  /** The epoch this run redoes has come to its end: rows after it may be made. */
  releaseHold(): void {
    this.holdAt = Number.POSITIVE_INFINITY;
  }

  /** Makes the generated rows due by `until` and before offset `end`, at most `budget`. */
  generateDue(head: RowSink, budget: number, until: number, upTo: number): number {
    const end = Math.min(upTo, this.holdAt);
    const schedule = this.schedule!;
    const generate = this.generate!;
    const task = this.task;
    const m = task.meta;
    const manual = this.host.clock.manual;
    let n = 0;
    while (n < budget) {
      if (this.offset >= end) break;
      const due = schedule.dueTime(this.offset);
      if (due > until) break;
      const now = this.host.precise.now();
      m.sourceTime = manual ? now : due;
      m.readTime = now;
      m.origin = this.offset;
      m.sourceIndex = this.index;
      m.sourcePartition = task.partition;
      this.offset++;
      this.rows++;
      task.rowsIn++;
      n++;
      let row: unknown;
      try {
        row = generate(task.partition, m.origin, due);
      } catch (e) {
        task.badRecord(this.op, { partition: task.partition, offset: m.origin }, e);
        continue;
      }
      head.push(row);
      if (task.stalled()) break;
    }
    return n;
  }

  /** When the next generated row is due (Infinity: the task generates none, or none yet). */
  nextDue(): number {
    if (this.schedule === null || this.offset >= this.holdAt) return Number.POSITIVE_INFINITY;
    return this.schedule.dueTime(this.offset);
  }

  /** The highest offset the source has (or, generated, has had due by now): for the backlog. */
  latestOffset(): number {
    if (this.schedule === null) return -1;
    return Math.max(this.offset, this.schedule.dueCount(this.host.scheduleNow()));
  }

  /** The end of the input: the decoder releases what it holds (a dead-letter producer). */
  close(): void {
    this.decoder?.close?.();
  }
}
