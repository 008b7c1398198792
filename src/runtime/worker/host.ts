import type { ErrorLocation } from '../../errors.js';
import { LatencyRecorder } from '../../metrics/latency.js';
import type { StaticIndex } from '../../operators/contract.js';
import type { AnalyzedPlan } from '../../plan/analyze.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { BadRecordPolicy, LateRowPolicy } from '../../plan/query-options.js';
import { DoorbellTable } from '../channel/doorbell.js';
import { FrameWriter } from '../channel/frame-codec.js';
import { RingProducer } from '../channel/spsc-ring.js';
import { ABORT_SLOT, REPORT_GEN_SLOT, START_TIME_F64, STARTED_SLOT } from '../control-layout.js';
import type { HostMessage, HostSpec, StateCheckpointSpec } from '../messages.js';
import { type Clock, clockFromSpec } from '../time/clock.js';
import { PreciseTime } from '../time/precise-time.js';
import type { HostContext } from './host-context.js';
import { StateMemoryLimit, type TaskState } from './state-memory.js';
import { Task } from './task.js';

/** While busy, the host lets its event loop run (async sinks, timers) at least this often. */
const YIELD_EVERY_MS = 2;

/**
 * While spinning idle, the host polls its tasks' input rings this many times between full passes.
 * A full pass reads the clock, and V8 boxes every clock reading (16 bytes): spinning on full
 * passes made ≈ 50 MB/s of garbage, a third of a busy worker's, and as many more young-generation
 * collections. The polls look for a frame only, so a generated row or a deadline that falls due
 * meanwhile waits for them: 0.2–0.7 µs (measured in E2 and E4).
 */
const IDLE_POLLS = 32;

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A worker thread's mailbox loop over the tasks placed on it. It steps every task in turn; when a
 * full pass finds nothing to do it keeps polling for `spinMicros` (a row arriving now is picked up
 * within nanoseconds), then parks on its doorbell with `Atomics.waitAsync` — an idle query costs
 * no CPU. Producers ring the doorbell only when the host is parked.
 */
export class Host implements HostContext {
  readonly hostIndex: number;
  readonly queryId: string;
  readonly task: string | null;
  readonly clock: Clock;
  readonly precise: PreciseTime;
  readonly recorder = new LatencyRecorder();
  readonly result: FrameWriter;
  readonly onBadRecord: BadRecordPolicy;
  readonly onLateRow: LateRowPolicy;
  readonly multipleWatermarkPolicy: 'min' | 'max';
  readonly microBatch: boolean;
  readonly arrowMaxRecordsPerBatch: number | undefined;
  readonly initialWatermarks: readonly number[];
  readonly initialLateWatermark: number;
  readonly scheduleStarts: readonly (number | null)[];
  readonly state: StateCheckpointSpec | null;
  readonly firstEpoch: number;
  startTime = Number.NaN;
  readonly bells: DoorbellTable;
  readonly bell: number;
  readonly tasks: Task[];
  private readonly stateMemory: StateMemoryLimit;
  private readonly control: Int32Array;
  private current: Task | undefined;
  /** System clock time at the start of the host loop's current pass (see passNow). */
  private passTime = 0;

  constructor(
    private readonly spec: HostSpec,
    plan: AnalyzedPlan,
    physical: PhysicalPlan,
    readonly staticTables: ReadonlyMap<number, StaticIndex>,
  ) {
    this.hostIndex = spec.hostIndex;
    this.queryId = spec.queryId;
    this.task = spec.task;
    this.clock = clockFromSpec(spec.clock);
    this.precise = new PreciseTime(spec.clock.wallOffset);
    this.bells = new DoorbellTable(spec.bells);
    this.bell = spec.bell;
    this.result = new FrameWriter(new RingProducer(spec.resultRing, this.bells));
    this.onBadRecord = spec.onBadRecord;
    this.onLateRow = spec.onLateRow;
    this.multipleWatermarkPolicy = spec.multipleWatermarkPolicy;
    this.microBatch = spec.microBatch;
    this.arrowMaxRecordsPerBatch = spec.arrowMaxRecordsPerBatch;
    this.initialWatermarks = spec.watermarks;
    this.initialLateWatermark = spec.lateWatermark;
    this.scheduleStarts = spec.scheduleStarts;
    this.state = spec.state;
    this.firstEpoch = spec.firstEpoch;
    this.control = new Int32Array(spec.control);
    this.stateMemory = new StateMemoryLimit(spec.stateMemoryLimitBytes);
    this.tasks = spec.tasks.map((t) => new Task(this, t, plan, physical));
    if (this.tasks.some((t) => t.stateHeld() !== null)) this.stateMemory.watch();
  }

  /**
   * Fails the task holding the most state if this worker's stateful tasks hold more than the query
   * allows (StateMemoryLimit): at each report (every progress interval) and each stateful epoch end.
   */
  checkStateMemory(): void {
    const held: TaskState[] = [];
    for (const t of this.tasks) {
      const s = t.stateHeld();
      if (s !== null) held.push(s);
    }
    if (held.length > 0) this.stateMemory.check(held);
  }

  scheduleNow(): number {
    return this.clock.manual ? this.clock.now() : this.precise.now();
  }

  passNow(): number {
    return this.clock.manual ? this.clock.now() : this.passTime;
  }

  /** Runs until every task has ended (true) or the driver aborts (false). */
  async run(): Promise<boolean> {
    const { bells, bell, control, tasks } = this;
    const spinMs = this.spec.spinMicros / 1000;
    // While a task awaits a UDF thread's answer, at least this long where the machine has a core
    // for that thread: an answer to a small batch takes tens of µs, and waking a parked host costs
    // as much again (see answeredSpinMicros).
    const answerSpinMs = this.spec.udfAnswerSpinMicros / 1000;
    // Rounds are numbered from 1: one the driver asked before this loop started is answered too.
    let reportGen = 0;
    const precise = this.precise;
    let lastYield = precise.now();
    let idleSince = 0;
    let microtasksRun = false;
    for (;;) {
      // The one clock read of a pass: tasks, spinning and yielding all go by it.
      const now = precise.now();
      this.passTime = now;
      if (Atomics.load(control, ABORT_SLOT) !== 0) return false;
      this.ensureStarted();
      const gen = Atomics.load(control, REPORT_GEN_SLOT);
      if (gen !== reportGen) {
        reportGen = gen;
        this.report(gen);
        this.checkStateMemory();
      }
      let progressed = false;
      let live = 0;
      for (let i = 0; i < tasks.length; i++) {
        const t = tasks[i]!;
        this.current = t;
        if (t.step()) progressed = true;
        if (!t.finished) live++;
      }
      this.current = undefined;
      // Dead letters (any task) and driver-side sink rows are published once per pass; frames
      // that did not fit the result ring are retried.
      if (this.result.blocked) this.result.flush();
      this.result.publish();
      if (live === 0) {
        // State written at the last epochs is durable, and the driver told, before the host ends.
        for (const t of tasks) await t.settle();
        while (!this.result.flush()) {
          this.result.publish();
          if (Atomics.load(control, ABORT_SLOT) !== 0) return false;
          await yieldToEventLoop();
        }
        this.result.publish();
        return true;
      }
      // Time no row needed goes to checkpoints being written (see StateCheckpointer).
      if (!progressed) progressed = this.idleWork();
      if (progressed) {
        idleSince = 0;
        microtasksRun = false;
        if (now - lastYield > YIELD_EVERY_MS) {
          await yieldToEventLoop();
          lastYield = precise.now();
        }
        continue;
      }
      // A task waits for a promise that may have settled already (a sink step returning
      // Promise.resolve()): its continuation is a microtask, which runs at the host's next await.
      // One such turn first, then spinning and parking as usual (a promise of I/O needs the event
      // loop, which only parking or a yield lets run).
      if (!microtasksRun && this.anyAwaitingPromise()) {
        microtasksRun = true;
        await undefined;
        continue;
      }
      if (idleSince === 0) idleSince = now;
      // Spinning never keeps the event loop from turning for long either: a task may be waiting
      // for a promise (an asynchronous sink) whose continuation only the event loop runs.
      if (now - idleSince < spinMs || (now - idleSince < answerSpinMs && this.anyAwaitingUdf())) {
        this.pollInputs(IDLE_POLLS);
        if (now - lastYield > YIELD_EVERY_MS) {
          await yieldToEventLoop();
          lastYield = precise.now();
        }
        continue;
      }
      // A generated row due within the spin window is waited for spinning: timed parks are coarse
      // (Atomics.waitAsync rounds timeouts to whole milliseconds).
      if (this.parkTimeout() < spinMs) {
        idleSince = now;
        if (now - lastYield > YIELD_EVERY_MS) {
          await yieldToEventLoop();
          lastYield = precise.now();
        }
        continue;
      }

      // Park. Announce sleep, then look once more (see doorbell.ts for why this cannot miss a ring).
      const seq = bells.prepareToPark(bell);
      if (
        this.anyReady() ||
        Atomics.load(control, ABORT_SLOT) !== 0 ||
        (Number.isNaN(this.startTime) && Atomics.load(control, STARTED_SLOT) !== 0) ||
        Atomics.load(control, REPORT_GEN_SLOT) !== reportGen
      ) {
        bells.unpark(bell);
        idleSince = 0;
        continue;
      }
      const wait = bells.parkAsync(bell, seq, this.parkTimeout());
      if (wait !== undefined) await wait;
      bells.unpark(bell);
      lastYield = precise.now();
      idleSince = 0;
    }
  }

  ensureStarted(): void {
    if (!Number.isNaN(this.startTime) || Atomics.load(this.control, STARTED_SLOT) === 0) return;
    this.startTime = new Float64Array(this.spec.control)[START_TIME_F64]!;
    for (const t of this.tasks) t.start(this.startTime);
  }

  /** One slice of background work of the first task that has some; false when none has. */
  private idleWork(): boolean {
    const tasks = this.tasks;
    for (let i = 0; i < tasks.length; i++) {
      const t = tasks[i]!;
      this.current = t;
      if (t.idleWork()) {
        this.current = undefined;
        return true;
      }
    }
    this.current = undefined;
    return false;
  }

  private anyAwaitingUdf(): boolean {
    const tasks = this.tasks;
    for (let i = 0; i < tasks.length; i++) if (tasks[i]!.awaitingUdf()) return true;
    return false;
  }

  private anyAwaitingPromise(): boolean {
    const tasks = this.tasks;
    for (let i = 0; i < tasks.length; i++) if (tasks[i]!.awaitingPromise()) return true;
    return false;
  }

  private anyReady(): boolean {
    for (const t of this.tasks) {
      this.current = t;
      if (t.ready()) return true;
    }
    this.current = undefined;
    return false;
  }

  /** Polls the tasks' input rings up to `polls` times, until one has a frame (see IDLE_POLLS). */
  private pollInputs(polls: number): void {
    const tasks = this.tasks;
    for (let k = 0; k < polls; k++) {
      for (let i = 0; i < tasks.length; i++) if (tasks[i]!.hasInput()) return;
    }
  }

  /** How long to park: until the next generated row is due, or until rung (manual clock). */
  private parkTimeout(): number {
    if (this.clock.manual) return Number.POSITIVE_INFINITY;
    let due = Number.POSITIVE_INFINITY;
    for (const t of this.tasks) due = Math.min(due, t.nextDueTime());
    if (due === Number.POSITIVE_INFINITY) return due;
    return Math.max(0, due - this.precise.now());
  }

  /** Where the host was when an unexpected error escaped. */
  location(): ErrorLocation {
    const t = this.current;
    return t ? { stage: t.stageId, partition: t.partition } : {};
  }

  /** Sends counters and the latency recorded since the last report. */
  report(gen: number, clean?: boolean): void {
    const message: HostMessage = {
      type: 'report',
      hostIndex: this.hostIndex,
      gen,
      clean,
      tasks: this.tasks.map((t) => t.counters()),
      latency: this.recorder.drain(),
    };
    this.spec.port.postMessage(message);
  }

  abort(error: Error): void {
    for (const t of this.tasks) t.abort(error);
  }

  /** The driver logged epoch `epoch`: sink partitions that commit in the worker commit it. */
  async commitSinks(epoch: number): Promise<void> {
    await Promise.all(this.tasks.map((t) => t.commitSinkEpoch(epoch)));
  }

  dispose(): void {
    this.recorder.destroy();
    this.stateMemory.close();
  }
}
