import { performance } from 'node:perf_hooks';
import type { StateCheckpointer } from '../../checkpoint/state-checkpointer.js';
import { ErrorCode, MillraceError, serializeError } from '../../errors.js';
import type {
  BatchChannel,
  DirectBatchChannel,
  OperatorContext,
  OperatorRef,
  RowSink,
  StatefulOperator,
  StaticIndex,
} from '../../operators/contract.js';
import { buildChain, isHolding, isStateful } from '../../operators/index.js';
import { type EventTimeStats, WatermarkOperator } from '../../operators/watermark.js';
import { type AnalyzedPlan, describeOperator } from '../../plan/analyze.js';
import {
  feedsWatermarksPerSourcePartition,
  type PhysicalPlan,
  runsArrowCode,
  type StagePlan,
  watermarksPerSourcePartition,
} from '../../plan/physical.js';
import {
  FrameKind,
  frameKindName,
  SOURCE_WATERMARK_ARG_BEHIND,
  WATERMARK_ARG_BEHIND,
  WATERMARK_ARG_INPUT_MASK,
} from '../channel/frame-kind.js';
import { TAG_KIND_MASK, tagArg } from '../channel/ring-layout.js';
import { RingConsumer, RingProducer } from '../channel/spsc-ring.js';
import type { TaskCounters, TaskSpec } from '../messages.js';
import { inlineRunner } from '../udf/udf-runner.js';
import { DeferredWatermarks } from './deferred-watermarks.js';
import { HeldOperators } from './held-operators.js';
import type { HostContext } from './host-context.js';
import { type InputChannel, InputSet } from './input-set.js';
import { RowMeta, readOriginArg } from './row-meta.js';
import { RowProblems, TaskFailure } from './row-problems.js';
import { ShuffleOutput } from './shuffle-output.js';
import { createSinkRuntime } from './sink-factory.js';
import { SinkOutput, type SinkTask } from './sink-output.js';
import type { TaskState } from './state-memory.js';
import type { TaskOutput } from './task-output.js';
import { type SourceTask, TaskSource } from './task-source.js';
import { openStateCheckpointer, wireInputs } from './task-wiring.js';
import { InlineUdfChannel, UdfChannel } from './udf-channel.js';
import type { WatermarkTracker } from './watermark-tracker.js';

/** Frames (or generated rows) a task handles per step before the host moves to its next task. */
const STEP_BUDGET = 256;

const NO_ERROR = Symbol('no error');

/**
 * A long-running task: one partition of one stage, hosted by a worker for the life of the query.
 * Each `step()` handles a bounded amount of input and never blocks: when an output ring is full,
 * the frames that do not fit wait in the output and the task reads no more input until they are
 * written (backpressure reaches the producer through its own full ring). Control markers are
 * handled in-band: barriers are aligned over all inputs, flush probes and watermarks are forwarded
 * once every input has passed them, end-of-stream once every input has ended.
 */
export class Task implements OperatorContext, SinkTask, SourceTask {
  readonly index: number;
  readonly stageId: number;
  readonly partition: number;
  /** Partitions of the task's stage. */
  readonly partitions: number;
  readonly meta = new RowMeta();
  finished = false;

  rowsIn = 0;
  rowsOut = 0;
  private readonly problems: RowProblems;
  backpressureMs = 0;

  private readonly inputs: InputSet;
  private readonly output: TaskOutput;
  private readonly head: RowSink;
  /** Per input channel, where its rows go (the chain's head, or a side of a two-input operator). */
  private readonly heads: RowSink[];
  /** The stage's stateful operator, when it has one (it heads the chain). */
  private readonly stateful: StatefulOperator | null;
  /** The stateful operator as errors name it (`aggregate#3`). */
  private readonly statefulName: string;
  /** The stateful operator has work on idle ticks (timers fired by the wall clock). */
  private readonly ticking: boolean;
  private readonly watermarkOps: WatermarkOperator[];
  /** Operators that hold rows across pushes (Arrow UDFs, mapPartitions). */
  private readonly held: HeldOperators;
  /** Watermarks heard behind rows the held operators hold, applied once those are out. */
  private readonly deferred = new DeferredWatermarks();
  private readonly udfChannels = new Map<number, BatchChannel | DirectBatchChannel>();
  readonly microBatch: boolean;
  readonly arrowMaxRecordsPerBatch: number | undefined;
  private readonly watermarks: WatermarkTracker;
  /** The watermark inputs whose operator runs in this task: it speaks for its partition of them. */
  private readonly ownWatermarks: readonly number[];
  /** Per watermark input: 1 when it is one of {@link ownWatermarks}. */
  private readonly ownWatermark: Uint8Array;
  /** What the task last said downstream: its source partition has input it has not read yet. */
  private toldBehind: boolean;
  readonly watermarksPerPartition: boolean;
  /** The task's rows go straight to tasks that keep watermarks per source partition: it sends BACKLOG. */
  private readonly feedsPartitionWatermarks: boolean;
  /** Source index << 16 | partition → input channel, where watermarks are kept per partition. */
  private readonly partitionChannels: Map<number, number> | null;
  /** A source task's source (null for tasks that read shuffles). */
  private readonly source: TaskSource | null;
  private readonly sinkName: string;
  private waiting: PromiseLike<unknown> | null = null;
  private asyncError: unknown = NO_ERROR;
  /** Writes the stateful operator's state to the checkpoint (null: no checkpoint or no state). */
  private readonly checkpointer: StateCheckpointer | null = null;
  private stateError: unknown = NO_ERROR;
  private ending = false;
  private epoch = 0;
  private forwardedFlush = 0;
  /** While a marker waits for the generator to catch up: the clock time it was first seen. */
  private markerCutoff = Number.NaN;
  private blockedSince = 0;
  /** Micro-batch mode: the watermark the last finished batch used (what its progress reports). */
  private batchWatermark = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly host: HostContext,
    spec: TaskSpec,
    plan: AnalyzedPlan,
    physical: PhysicalPlan,
  ) {
    this.index = spec.index;
    this.stageId = spec.stage;
    this.partition = spec.partition;
    this.problems = new RowProblems(host, this);
    this.microBatch = host.microBatch;
    this.arrowMaxRecordsPerBatch = host.arrowMaxRecordsPerBatch;
    for (const c of spec.udf ?? []) {
      this.udfChannels.set(
        c.operatorId,
        new UdfChannel(new RingProducer(c.request, host.bells), new RingConsumer(c.response, host.bells)),
      );
    }
    const stage: StagePlan = physical.stages[spec.stage]!;
    // Arrow code not sent to the UDF threads runs here, on the task's thread.
    for (const op of stage.chain) {
      if (runsArrowCode(op.node) && !this.udfChannels.has(op.id))
        this.udfChannels.set(op.id, new InlineUdfChannel(inlineRunner(plan.operators[op.id]!)));
    }
    this.partitions = stage.partitions;
    this.inputs = new InputSet(spec.inputs.map((sab) => new RingConsumer(sab, host.bells)));
    const sink = plan.definition.sink;
    this.sinkName = sink.description;
    if (stage.output.kind === 'shuffle') {
      const rings = spec.outputs.map((sab) => new RingProducer(sab, host.bells));
      this.output = new ShuffleOutput(rings, stage.output, spec.partition, this.meta, this);
    } else {
      this.output = new SinkOutput(createSinkRuntime(sink, host, this), this, host);
    }
    this.watermarksPerPartition = !host.microBatch && watermarksPerSourcePartition(plan, physical, stage);
    this.feedsPartitionWatermarks =
      !host.microBatch && feedsWatermarksPerSourcePartition(plan, physical, stage);
    const ops = buildChain(stage.chain, this.output, this, plan);
    this.head = ops[0] ?? this.output;
    this.stateful = ops[0] !== undefined && isStateful(ops[0]) ? ops[0] : null;
    this.statefulName = this.stateful === null ? '' : describeOperator(stage.chain[0]!);
    this.ticking = this.stateful?.tick !== undefined && !host.microBatch;
    ({
      heads: this.heads,
      watermarks: this.watermarks,
      partitionChannels: this.partitionChannels,
    } = wireInputs(plan, physical, stage, this.head, this.stateful, host));
    this.watermarkOps = ops.filter((o): o is WatermarkOperator => o instanceof WatermarkOperator);
    this.ownWatermarks = plan.watermarks
      .filter((w) => stage.chain.some((op) => op.id === w.operatorId))
      .map((w) => w.index);
    this.ownWatermark = new Uint8Array(plan.watermarks.length);
    for (const w of this.ownWatermarks) this.ownWatermark[w] = 1;
    // A source task counts as behind until it has looked (see sayBehind).
    this.toldBehind = stage.inputs[0]!.kind === 'source';
    this.held = new HeldOperators(ops.filter(isHolding));
    if (this.stateful !== null && host.state !== null) {
      this.checkpointer = openStateCheckpointer(this.stateful, stage.chain[0]!.id, this, host, (e) => {
        this.stateError = e;
      });
    }
    this.stateful?.start?.();
    this.epoch = host.firstEpoch;
    const first = stage.inputs[0]!;
    this.source =
      first.kind === 'source'
        ? new TaskSource(
            this,
            host,
            first,
            plan.operators[first.source.operatorId]!,
            spec.startOffset ?? 0,
            spec.redoEnd,
            watermarkReading(plan, first.source.operatorId),
          )
        : null;
  }

  /** The query's clock started at `startTime`: a generated source schedules its rows from it. */
  start(startTime: number): void {
    this.source?.start(startTime);
    this.watermarks.start(startTime);
    // Every task that runs a watermark operator reports once at the start, rows or not: downstream,
    // a partition not heard from holds the watermark back.
    for (const w of this.ownWatermarks) this.watermarks.touch(w);
  }

  // --- stepping ----------------------------------------------------------------------------------

  /**
   * Does some work if there is any; returns whether it did. Never blocks. Whatever the step wrote
   * is published, and whatever it read is handed back, before it returns.
   */
  step(): boolean {
    try {
      return this.work();
    } finally {
      // Watermarks heard or made in this step travel on after the rows that came before them.
      this.forwardWatermarks();
      this.output.publish();
      this.inputs.flushReleases();
    }
  }

  private work(): boolean {
    if (this.finished) return false;
    const now = this.host.passNow();
    if (this.watermarks.tick(now)) this.stateful?.onWatermark(this.watermarks.watermark);
    if (this.ticking && this.stateful!.nextTimerDue!() <= now) this.stateful!.tick!(now);
    if (this.asyncError !== NO_ERROR) this.sinkFailed(this.asyncError);
    if (this.stateError !== NO_ERROR) this.checkpointFailed();
    if (this.waiting !== null) return false;
    if (this.output.blocked && !this.unblock()) return false;
    if (this.ending) {
      this.finished = true;
      return true;
    }
    let work = 0;
    const held = this.held;
    if (held.any) {
      work += held.advance();
      if (this.deferred.any && !held.holding()) this.applyDeferred();
      if (this.output.blocked || held.full()) return work > 0;
    }
    let anyAligned = false;
    const channels = this.inputs.channels;
    for (let i = 0; i < channels.length; i++) {
      const input = channels[i]!;
      if (input.eos) continue;
      if (input.aligned) {
        anyAligned = true;
        continue;
      }
      const ring = input.reader.ring;
      while (work < STEP_BUDGET && ring.poll()) {
        const kind = ring.tag & TAG_KIND_MASK;
        if (kind === FrameKind.DATA) {
          this.onData(input, this.heads[i]!);
          ring.releaseDeferred();
          if (this.deferred.any) this.deferred.rowRead();
        } else if (!this.onMarker(input, kind)) {
          // A marker behind held rows: the task has work again when an answer arrives.
          return held.markerHeld ? work > 0 : true;
        }
        work++;
        if (this.waiting !== null || this.output.blocked || this.ending) return true;
        if (held.any && held.full()) return true;
        if (input.aligned) {
          anyAligned = true;
          break;
        }
      }
    }
    const source = this.source;
    if (source?.generating === true && !this.host.microBatch && !anyAligned && work < STEP_BUDGET) {
      work += source.generateDue(
        this.head,
        STEP_BUDGET - work,
        this.host.passNow(),
        Number.POSITIVE_INFINITY,
      );
    }
    // Real-time mode, no more input waits: what the operators hold goes to their UDF threads now.
    // A micro-batch's batches are full but for the last, which its end marker sends: its output
    // goes out at the batch's end anyway, and its batches do not depend on thread timing.
    if (held.any && work < STEP_BUDGET && !this.host.microBatch) held.inputDrained();
    return work > 0;
  }

  /**
   * Whether the task's source partition has input it has not read yet — generated rows due, what
   * its feed last said, or rows held by an operator before the watermark's — goes downstream with
   * its watermarks: a partition that lags holds the watermark back (WatermarkTracker), so no row of
   * a backlog is late because another partition read faster.
   */
  private sayBehind(): void {
    const source = this.source;
    const behind =
      source !== null
        ? source.behind(this.host.passNow()) || this.held.any
        : this.watermarksPerPartition && (this.held.any || this.watermarks.holding(this.ownWatermarks));
    if (behind === this.toldBehind) return;
    this.toldBehind = behind;
    for (const w of this.ownWatermarks) this.watermarks.touch(w);
    if (this.feedsPartitionWatermarks) this.output.marker(FrameKind.BACKLOG, behind ? 1 : 0);
  }

  /** Runs a slice of work that waits for idle time (a checkpoint being written); false if none. */
  idleWork(): boolean {
    return this.checkpointer?.idleSlice() === true;
  }

  /** Could step() make progress now? Called by the host before it parks. */
  ready(): boolean {
    if (this.finished) return false;
    if (this.asyncError !== NO_ERROR || this.stateError !== NO_ERROR) return true;
    if (this.waiting !== null) return false;
    if (this.output.blocked) return this.unblock();
    if (this.ending) return true;
    if (this.held.any) {
      if (this.held.ready()) return true;
      if (this.held.markerBlocked()) return false;
    }
    if (!this.host.microBatch && this.host.clock.now() >= this.watermarks.nextDeadline) return true;
    if (this.ticking && this.host.clock.now() >= this.stateful!.nextTimerDue!()) return true;
    if (this.inputs.hasFrame()) return true;
    return this.source !== null && !this.host.microBatch && this.source.nextDue() <= this.host.scheduleNow();
  }

  /** Whether a frame waits in one of the task's input rings (a cheap part of {@link ready}). */
  hasInput(): boolean {
    if (this.finished) return false;
    if (this.held.any) {
      if (this.held.ready()) return true;
      if (this.held.markerBlocked()) return false;
    }
    return this.inputs.hasFrame();
  }

  /**
   * Clock time at which this task will have work without any input arriving (generated rows).
   * A stalled task's generated rows are not due: it cannot take them before the promise it waits
   * for settles or its output frees space, and either rings the host's bell. Counting them would
   * keep the host from parking — and from running the promise's continuation.
   */
  nextDueTime(): number {
    if (this.finished || this.ending || this.host.microBatch) return Number.POSITIVE_INFINITY;
    const idle = this.ticking
      ? Math.min(this.watermarks.nextDeadline, this.stateful!.nextTimerDue!())
      : this.watermarks.nextDeadline;
    return this.source === null || this.stalled() ? idle : Math.min(idle, this.source.nextDue());
  }

  private unblock(): boolean {
    if (!this.output.flush()) {
      if (this.blockedSince === 0) this.blockedSince = performance.now();
      return false;
    }
    if (this.blockedSince !== 0) {
      this.backpressureMs += performance.now() - this.blockedSince;
      this.blockedSince = 0;
    }
    return true;
  }

  private onData(input: InputChannel, head: RowSink): void {
    const r = input.reader;
    const m = this.meta;
    m.sourceTime = r.sourceTime();
    m.origin = r.origin();
    this.rowsIn++;
    const source = this.source;
    if (source === null) {
      m.readTime = r.readTime();
      readOriginArg(m, tagArg(r.ring.tag));
      head.push(r.readRow());
      return;
    }
    source.read(m);
    source.push(head, r.readRow(), tagArg(r.ring.tag));
  }

  // --- control markers: barriers and epochs, flushes, watermarks, end of stream ----------------

  /** Applies the watermarks that waited for held rows (see DeferredWatermarks). */
  private applyDeferred(): void {
    this.deferred.apply(this.applyWatermark);
  }

  /** Made once: applyDeferred runs on the row path. */
  private readonly applyWatermark = (channel: number, input: number, value: number, behind: boolean) => {
    if (this.watermarks.fromChannel(channel, input, value, this.host.passNow(), behind))
      this.stateful?.onWatermark(this.watermarks.watermark);
  };

  /** Handles a control marker. Returns false when it cannot be consumed yet (left in the ring). */
  private onMarker(input: InputChannel, kind: number): boolean {
    const ring = input.reader.ring;
    const value = input.reader.markerValue();
    const source = this.source;
    if (source?.unstarted === true) this.host.ensureStarted();
    if (kind === FrameKind.BATCH && source?.generating === true) {
      // A micro-batch ends at an offset: a generator makes the rows up to it first.
      const end = input.reader.markerValue2();
      source.generateDue(this.head, STEP_BUDGET, Number.POSITIVE_INFINITY, end);
      if (source.offset < end) return false;
      source.releaseHold();
    } else if (
      source?.generating === true &&
      (kind === FrameKind.FLUSH || (kind === FrameKind.BARRIER && this.host.clock.manual))
    ) {
      // Rows a generator owed before a flush probe belong before it: processAllAvailable waits
      // for them. A barrier takes them only under a manual clock, so that what each epoch of a
      // test holds does not depend on thread timing; under the real clock an epoch ends with what
      // was made by then — a generator behind its schedule (an overloaded query) would otherwise
      // hold every barrier, and a stop, until it caught up. The rows it owes go to the next epoch.
      if (Number.isNaN(this.markerCutoff)) this.markerCutoff = this.host.scheduleNow();
      source.generateDue(this.head, STEP_BUDGET, this.markerCutoff, Number.POSITIVE_INFINITY);
      if (source.nextDue() <= this.markerCutoff) return false;
      this.markerCutoff = Number.NaN;
    }
    if (kind === FrameKind.SOURCE_BACKLOG) {
      // Not held behind rows an operator holds: the task counts as behind while it holds any.
      ring.releaseDeferred();
      source?.fed(value !== 0);
      return true;
    }
    if (
      kind === FrameKind.WATERMARK &&
      this.held.any &&
      !this.host.microBatch &&
      this.held.holding() &&
      this.deferred.canDefer()
    ) {
      // Behind held rows: kept for when they are out, while the task reads on (DeferredWatermarks).
      const arg = tagArg(ring.tag);
      ring.releaseDeferred();
      this.deferred.defer(
        input.index,
        arg & WATERMARK_ARG_INPUT_MASK,
        value,
        (arg & WATERMARK_ARG_BEHIND) !== 0,
      );
      return true;
    }
    if (
      this.held.any &&
      this.held.holdMarker(
        kind === FrameKind.BATCH || kind === FrameKind.BARRIER || kind === FrameKind.END_OF_STREAM,
      )
    )
      return false;
    ring.releaseDeferred();
    // Watermarks that arrived before this marker go first.
    if (this.deferred.any) this.applyDeferred();
    switch (kind) {
      case FrameKind.BATCH:
      case FrameKind.BARRIER:
        input.aligned = true;
        input.barrierEpoch = value;
        this.completeBarrier();
        return true;
      case FrameKind.FLUSH:
        if (value > input.flushId) input.flushId = value;
        this.forwardFlush();
        return true;
      case FrameKind.BACKLOG:
        if (this.watermarks.channelBacklog(input.index, value !== 0, this.host.passNow()))
          this.stateful?.onWatermark(this.watermarks.watermark);
        return true;
      case FrameKind.WATERMARK: {
        const arg = tagArg(ring.tag);
        const behind = (arg & WATERMARK_ARG_BEHIND) !== 0;
        const w = arg & WATERMARK_ARG_INPUT_MASK;
        if (this.watermarks.fromChannel(input.index, w, value, this.host.passNow(), behind))
          this.stateful?.onWatermark(this.watermarks.watermark);
        return true;
      }
      case FrameKind.END_OF_STREAM:
        input.eos = true;
        if (this.watermarks.channelEnded(input.index, this.host.passNow()))
          this.stateful?.onWatermark(this.watermarks.watermark);
        if (this.inputs.allEnded()) {
          this.ending = true;
          this.source?.close();
          this.stateful?.finish?.();
          this.forwardMarker(FrameKind.END_OF_STREAM, 0);
        } else {
          this.completeBarrier();
          this.forwardFlush();
        }
        return true;
      default:
        throw new MillraceError(
          ErrorCode.TASK_FAILED,
          `internal: unexpected frame ${frameKindName(kind)} on an input`,
          {
            stage: this.stageId,
            partition: this.partition,
          },
        );
    }
  }

  /**
   * Passes a control marker on. Watermarks this task heard or made go first: whatever came before
   * the marker — the watermark it moved included — is downstream before the marker is.
   */
  private forwardMarker(kind: number, value: number): void {
    this.forwardWatermarks();
    this.output.marker(kind, value);
  }

  private forwardWatermarks(): void {
    // What the task says of its backlog is brought up to date first: a marker forwarded next (a
    // flush probe) must not overtake the report that the partition caught up.
    if ((this.ownWatermarks.length > 0 || this.feedsPartitionWatermarks) && !this.microBatch)
      this.sayBehind();
    this.watermarks.flush(this.sendWatermark);
  }

  /** Made once: forwardWatermarks runs after every batch of rows, and must not allocate. */
  private readonly sendWatermark = (input: number, value: number): void =>
    this.output.marker(
      FrameKind.WATERMARK,
      value,
      this.toldBehind && this.ownWatermark[input] === 1 ? input | WATERMARK_ARG_BEHIND : input,
    );

  /** Aligned barriers: forward once every live input delivered it, then read all inputs again. */
  private completeBarrier(): void {
    const epoch = this.inputs.alignedEpoch();
    if (epoch < 0) return;
    this.inputs.releaseAlignment();
    this.epoch = epoch + 1;
    if (this.source !== null) {
      // The driver records where each source partition stood at the end of the epoch.
      this.host.result.writeMarker2(
        FrameKind.SOURCE_OFFSET,
        epoch,
        this.source.offset,
        (this.source.index << 16) | this.partition,
      );
      // And where its own watermark stood, for the commit's record of what held the watermark back.
      if (this.watermarkOps.length > 0 && !this.microBatch) {
        this.host.result.writeMarker2(
          FrameKind.SOURCE_WATERMARK,
          epoch,
          this.watermarkOps[0]!.partitionWatermark,
          (this.source.index << 16) | this.partition | (this.toldBehind ? SOURCE_WATERMARK_ARG_BEHIND : 0),
        );
      }
    }
    if (this.stateful !== null) this.endEpoch(epoch);
    this.forwardMarker(FrameKind.BARRIER, epoch);
  }

  /**
   * The end of an epoch at a stateful task. In micro-batch mode the operator first emits what its
   * mode says with the batch's watermark (the one computed at the end of the previous batch), and
   * the watermark for the next batch is fixed from what this batch brought. Either way the driver
   * hears the watermarks (restored on restart) and when state falls due next (to decide on a
   * batch without data).
   */
  private endEpoch(epoch: number): void {
    const stateful = this.stateful!;
    // Reports speak of the watermark in force; the operator keeps time by its own (less its lag).
    let next = this.watermarks.inForce;
    if (this.host.microBatch) {
      this.batchWatermark = this.watermarks.watermark;
      stateful.finishBatch(this.batchWatermark);
      next = this.watermarks.commitBatch(this.host.clock.now());
    }
    this.host.result.writeValue(
      FrameKind.STATE_REPORT,
      {
        epoch,
        partition: this.partition,
        watermark: next,
        nextDue: stateful.nextDue() + this.watermarks.lag,
        nextTimerDue: stateful.processingTimerDue?.() ?? Number.POSITIVE_INFINITY,
        inputs: this.watermarks.values(),
      },
      this.index,
    );
    if (this.checkpointer !== null) {
      stateful.beforeCheckpoint?.();
      this.checkpointer.epochEnded(epoch);
    }
    this.host.checkStateMemory();
  }

  /** What this task's stateful operator holds (null: it has none). */
  stateHeld(): TaskState | null {
    const stateful = this.stateful;
    if (stateful === null) return null;
    return {
      operator: this.statefulName,
      stage: this.stageId,
      partition: this.partition,
      bytes: stateful.stateCounters().memoryUsedBytes,
    };
  }

  private checkpointFailed(): never {
    const e = this.stateError as Error;
    throw new TaskFailure(
      serializeError(
        new MillraceError(
          ErrorCode.CHECKPOINT_WRITE_FAILED,
          `writing the state to the checkpoint failed: ${e?.message ?? String(e)}`,
          {
            cause: e,
          },
        ),
        { stage: this.stageId, partition: this.partition },
      ),
    );
  }

  private forwardFlush(): void {
    const min = this.inputs.flushedUpTo();
    if (min !== Number.POSITIVE_INFINITY && min > this.forwardedFlush) {
      this.forwardedFlush = min;
      this.forwardMarker(FrameKind.FLUSH, min);
    }
  }

  // --- OperatorContext ---------------------------------------------------------------------

  badRecord(op: OperatorRef, row: unknown, error: unknown, userCode = true): void {
    this.problems.badRecord(op, row, error, userCode);
  }

  watermark(): number {
    return this.watermarks.watermark;
  }

  lateWatermark(): number {
    return this.watermarks.lateWatermark;
  }

  processingTime(): number {
    return this.host.clock.now();
  }

  advanceWatermark(input: number, value: number): void {
    if (this.watermarks.advance(input, value, this.host.passNow())) {
      this.stateful?.onWatermark(this.watermarks.watermark);
    }
  }

  advancePartitionWatermark(input: number, value: number): void {
    const m = this.meta;
    const channel = this.partitionChannels?.get((m.sourceIndex << 16) | m.sourcePartition);
    // A row of a source whose tasks do not feed this one directly counts as Spark's do.
    const now = this.host.passNow();
    const advanced =
      channel === undefined
        ? this.watermarks.advance(input, value, now)
        : this.watermarks.fromPartition(channel, input, value, now);
    if (advanced) this.stateful?.onWatermark(this.watermarks.watermark);
  }

  lateRow(op: OperatorRef, row: unknown): void {
    this.problems.lateRow(op, row, this.watermarks.lateWatermark);
  }

  udfChannel(operatorId: number): BatchChannel | DirectBatchChannel {
    const channel = this.udfChannels.get(operatorId);
    if (channel === undefined) throw new Error(`internal: operator ${operatorId} has no UDF channel`);
    return channel;
  }

  outputBlocked(): boolean {
    return this.output.blocked;
  }

  staticTable(operatorId: number): StaticIndex {
    const table = this.host.staticTables.get(operatorId);
    if (table === undefined)
      throw new Error(`internal: the static table of operator ${operatorId} was not loaded`);
    return table;
  }

  // --- SinkTask, SourceTask -------------------------------------------------------------------

  stalled(): boolean {
    return this.waiting !== null || this.output.blocked || (this.held.any && this.held.full());
  }

  /** Whether an operator of the task waits for a UDF thread's answer. */
  awaitingUdf(): boolean {
    return this.held.any && this.held.awaiting();
  }

  /** Whether the task waits for a promise (an asynchronous sink step) to settle. */
  awaitingPromise(): boolean {
    return this.waiting !== null;
  }

  waitFor(p: PromiseLike<unknown>): void {
    this.waiting = p;
    p.then(
      () => {
        this.waiting = null;
        this.host.bells.ringAlways(this.host.bell);
      },
      (e: unknown) => {
        this.asyncError = e;
        this.waiting = null;
        this.host.bells.ringAlways(this.host.bell);
      },
    );
  }

  sinkFailedLater(error: unknown): void {
    if (this.asyncError === NO_ERROR) this.asyncError = error;
    this.host.bells.ringAlways(this.host.bell);
  }

  sinkFailed(error: unknown): never {
    throw new TaskFailure(
      serializeError(error, {
        operator: { id: -1, kind: 'sink', name: this.sinkName },
        stage: this.stageId,
        partition: this.partition,
        userCode: !(error instanceof MillraceError),
      }),
    );
  }

  /** Resolves once the state checkpoint writes this task started have ended (before the task's host ends). */
  async settle(): Promise<void> {
    await this.checkpointer?.settle();
  }

  /** The driver logged epoch `epoch`: a sink partition that commits in the worker commits it now. */
  commitSinkEpoch(epoch: number): Promise<void> | undefined {
    return this.output instanceof SinkOutput ? this.output.commitEpoch(epoch) : undefined;
  }

  /** Best-effort cleanup when the query fails: lets a foreach writer see the error. */
  abort(error: Error): void {
    this.source?.close();
    if (this.output instanceof SinkOutput) this.output.abort(error);
  }

  counters(): TaskCounters {
    const source = this.source;
    return {
      index: this.index,
      sourceRows: source?.rows ?? 0,
      rowsIn: this.rowsIn,
      rowsOut: this.rowsOut,
      skipped: this.problems.skipped,
      deadLettered: this.problems.deadLettered,
      sourceOffset: source?.offset ?? -1,
      latestOffset: source?.latestOffset() ?? -1,
      epoch: this.epoch,
      watermark: this.host.microBatch ? this.batchWatermark : this.watermarks.watermark,
      state:
        this.stateful === null
          ? null
          : {
              ...this.stateful.stateCounters(),
              keyGroupsToLoad: this.stateful.store.keyGroupsToLoad,
              commitTimeMs: this.checkpointer?.commitMs ?? 0,
              checkpointBytes: this.checkpointer?.bytesWritten ?? 0,
            },
      eventTime: this.takeEventTimeStats(),
      backpressureMs:
        this.backpressureMs + (this.blockedSince === 0 ? 0 : performance.now() - this.blockedSince),
      partitionWatermark:
        this.watermarkOps.length === 0
          ? null
          : { value: this.watermarkOps[0]!.partitionWatermark, behind: this.toldBehind },
    };
  }

  private takeEventTimeStats(): EventTimeStats | null {
    if (this.watermarkOps.length === 0) return null;
    const all = this.watermarkOps.map((w) => w.takeStats());
    return all.reduce((a, b) => ({
      min: Math.min(a.min, b.min),
      max: Math.max(a.max, b.max),
      sum: a.sum + b.sum,
      count: a.count + b.count,
    }));
  }
}

/** The watermark input of a `withWatermark` that reads source operator `sourceOp` directly, or null. */
function watermarkReading(plan: AnalyzedPlan, sourceOp: number): number | null {
  const op = plan.operators.find(
    (o) => o.node.kind === 'watermark' && o.inputs.length === 1 && o.inputs[0] === sourceOp,
  );
  return op === undefined ? null : (plan.watermarks.find((w) => w.operatorId === op.id)?.index ?? null);
}
