import { ErrorCode, invalidArgument, MillraceError } from '../errors.js';
import type { AnalyzedPlan, PlannedOperator } from '../plan/analyze.js';
import { partitionOf, stableHash } from '../plan/partitioner.js';
import {
  declaration,
  type ExpiredTimer,
  type ProcessorHandle,
  processorInstance,
  type StateDeclaration,
  type StatefulProcessor,
  type StateOptions,
  type TimerValues,
} from '../plan/stateful-processor.js';
import { isMicroBatch } from '../plan/trigger.js';
import { PackedStore } from '../state/packed-store.js';
import type { InMemoryStateStore } from '../state/state-store.js';
import { TimeIndex } from '../state/time-index.js';
import type { OperatorContext, RowSink, StatefulOperator, StateOperatorCounters } from './contract.js';
import {
  type KeyEntry,
  keyEntryForm,
  keyText,
  migrateLegacyEntries,
  NO_TIMERS,
  StateScope,
} from './processor-state.js';
import { rowTime } from './row-time.js';
import { ListStateImpl, MapStateImpl, ValueStateImpl } from './state-variables.js';

class Times implements TimerValues, ExpiredTimer {
  constructor(
    private readonly processingTime: number,
    private readonly watermark: number,
    private readonly expiry = -1,
  ) {}
  getCurrentProcessingTimeInMs(): number {
    return this.processingTime;
  }
  getCurrentWatermarkInMs(): number {
    return Number.isFinite(this.watermark) ? this.watermark : -1;
  }
  getExpiryTimeInMs(): number {
    return this.expiry;
  }
}

/**
 * `groupByKey(key).transformWithState(processor, options)` (docs/stateful-processing.md): user state and timers per
 * key, in the task that owns the key.
 *
 * - Real-time mode: `handleInputRows` once per row. Processing-time timers fire on data arrival
 *   (every due timer of the task, before the row), from an idle tick too with
 *   `timerFiring: 'wallClock'`, and at the end of the stream; event-time timers as the watermark
 *   passes them.
 * - Micro-batch mode: `handleInputRows` once per key per batch with all its rows, then the timers
 *   due at the batch's time (processing time) or watermark (event time).
 * - timeMode `'eventTime'`: rows at or below the watermark (on the first watermarked column above)
 *   are late: dropped and counted, or sent to the late rows.
 * - `eventTimeColumn`: each output row's time there must be later than the watermark the next
 *   operator judges late rows by when it gets the row (see {@link outputFloor}).
 */
export class TransformWithStateOperator implements StatefulOperator {
  readonly stateful = true;
  /** The keys and the handles of their packed entries (see {@link entries}): what is checkpointed. */
  readonly store: InMemoryStateStore<number>;
  private readonly entries = new PackedStore<KeyEntry>(keyEntryForm);
  private readonly processor: StatefulProcessor<unknown, unknown, unknown, unknown>;
  private readonly scope: StateScope;
  private readonly timers = new TimeIndex();
  private readonly expiries = new TimeIndex();
  private readonly node: PlannedOperator<'transformWithState'>['node'];
  /** Micro-batch mode: the batch's rows by key, keys in the order they first came. */
  private readonly batch: Map<string, { key: unknown; rows: unknown[] }> | null;
  /** timeMode 'eventTime': the column late rows are judged by. */
  private readonly eventColumn: string | null;
  private dropped = 0;
  private wasRestored = false;
  /**
   * Real-time mode, while the timers an advance of the watermark made due fire: the watermark
   * before that advance, which the next operator still has (this task sends the new one after the
   * rows its timers emit). NaN otherwise.
   */
  private firingBehind = Number.NaN;
  /** Real-time mode: the watermark of the last advance this operator heard of. */
  private heard = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly op: PlannedOperator<'transformWithState'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
    plan: AnalyzedPlan,
  ) {
    this.node = op.node;
    this.batch = isMicroBatch(plan.definition.trigger) ? new Map() : null;
    const above = plan.watermarksAbove[op.id]!;
    this.eventColumn =
      this.node.timeMode === 'eventTime' && above.length > 0 ? plan.watermarks[above[0]!]!.column : null;
    this.store = this.entries.store;
    this.scope = new StateScope(this.entries, this.expiries, this.node.states.length);
    this.processor = processorInstance(this.node.processor);
    const handle = this.handle(this.node.states);
    this.processor.handle = handle;
    this.processor.init(handle);
  }

  /** The handle of this task's processor: state variables over this operator's store. */
  private handle(declared: readonly StateDeclaration[]): ProcessorHandle {
    const made: StateDeclaration[] = [];
    const create = (kind: StateDeclaration['kind'], name: string, options: StateOptions | undefined) => {
      const d = declaration(name, kind, options, made);
      const expected = declared[made.length];
      if (expected?.name !== d.name || expected.kind !== d.kind)
        throw new MillraceError(
          ErrorCode.PLAN_MISMATCH,
          `transformWithState: init() declared ${kind}State('${name}') here but not in the same place on the ` +
            'driver; init() must declare the same states every time',
        );
      made.push(d);
      return d;
    };
    const scope = this.scope;
    return {
      valueState: (name, options) =>
        new ValueStateImpl(scope, create('value', name, options), made.length - 1),
      listState: (name, options) => new ListStateImpl(scope, create('list', name, options), made.length - 1),
      mapState: (name, options) => new MapStateImpl(scope, create('map', name, options), made.length - 1),
      registerTimer: (ms) => this.registerTimer(ms),
      deleteTimer: (ms) => this.deleteTimer(ms),
      listTimers: () => [...(scope.entry?.t ?? [])],
      getCurrentKey: () => scope.key,
    };
  }

  push(row: unknown): void {
    const now = this.ctx.processingTime();
    if (this.batch === null && this.node.timeMode === 'processingTime') this.fireTimers(now, now);
    this.expire(now);
    if (this.eventColumn !== null && this.isLate(row, this.eventColumn)) return;
    let key: unknown;
    try {
      key = this.node.key(row);
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return;
    }
    const text = keyText(key);
    if (this.batch !== null) {
      const held = this.batch.get(text);
      if (held === undefined) this.batch.set(text, { key, rows: [row] });
      else held.rows.push(row);
      return;
    }
    this.scope.begin(key, text, now);
    // runHandler's work without its closure: this runs once per row.
    let rows: unknown[] | null = null;
    let failure: unknown = null;
    try {
      rows = drained(this.processor.handleInputRows(key, [row], new Times(now, this.ctx.watermark())));
    } catch (e) {
      failure = e;
    }
    this.endHandler(row, rows, failure);
  }

  private isLate(row: unknown, column: string): boolean {
    const t = rowTime(row, column, this.op, this.ctx, 'event time');
    if (Number.isNaN(t)) return true;
    if (t > this.ctx.lateWatermark()) return false;
    this.dropped++;
    this.ctx.lateRow(this.op, row);
    return true;
  }

  onWatermark(watermark: number): void {
    if (this.node.timeMode === 'eventTime') {
      this.firingBehind = this.heard;
      try {
        this.fireTimers(watermark, this.ctx.processingTime());
      } finally {
        this.firingBehind = Number.NaN;
      }
    }
    this.heard = Math.max(this.heard, watermark);
  }

  /**
   * The time an output row's `eventTimeColumn` must be later than: the watermark the next operator
   * judges late rows by when the row reaches it. In micro-batch mode the one the batch judges late
   * rows by (Spark's rule); in real-time mode the one in force here, except for rows of timers
   * that an advance made due, which reach the next operator before that advance does.
   */
  private outputFloor(): number {
    return Number.isNaN(this.firingBehind) ? this.ctx.lateWatermark() : this.firingBehind;
  }

  /** Whether output `row` holds an event time the next operator can take; a bad record if not. */
  private inTime(row: unknown, column: string): boolean {
    const t = rowTime(row, column, this.op, this.ctx, 'event time');
    if (Number.isNaN(t)) return false;
    const floor = this.outputFloor();
    if (t > floor) return true;
    this.ctx.badRecord(
      this.op,
      row,
      new MillraceError(
        ErrorCode.EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED,
        `transformWithState emitted a row whose eventTimeColumn '${column}' (${iso(t)}) ` +
          `is not later than the watermark (${iso(floor)}): the operators after it ` +
          'would take it for late; emit rows at the time of the input row or the timer that makes them',
      ),
      true,
    );
    return false;
  }

  finishBatch(watermark: number): void {
    const now = this.ctx.processingTime();
    const times = new Times(now, watermark);
    for (const [text, { key, rows }] of this.batch!) {
      this.scope.begin(key, text, now);
      this.runHandler(rows, () => this.processor.handleInputRows(key, rows, times));
    }
    this.batch!.clear();
    if (this.node.timeMode === 'eventTime') this.fireTimers(watermark, now);
    else if (this.node.timeMode === 'processingTime') this.fireTimers(now, now);
    this.expire(now);
  }

  nextDue(): number {
    return this.node.timeMode === 'eventTime' ? this.timers.first() : Number.POSITIVE_INFINITY;
  }

  /** Real-time mode, `timerFiring: 'wallClock'`: when an idle tick has timers to fire. */
  nextTimerDue(): number {
    if (
      this.batch !== null ||
      this.node.timeMode !== 'processingTime' ||
      this.node.timerFiring !== 'wallClock'
    )
      return Number.POSITIVE_INFINITY;
    return this.timers.first();
  }

  processingTimerDue(): number {
    return this.node.timeMode === 'processingTime' ? this.timers.first() : Number.POSITIVE_INFINITY;
  }

  /** An idle tick of the task (see nextTimerDue). */
  tick(now: number): void {
    if (now >= this.nextTimerDue()) this.fireTimers(now, now);
  }

  /** Real-time mode, end of the stream: every timer already due fires, then the processor closes. */
  finish(): void {
    const now = this.ctx.processingTime();
    if (this.batch === null && this.node.timeMode === 'processingTime') this.fireTimers(now, now);
    try {
      this.processor.close();
    } catch (e) {
      this.ctx.badRecord(this.op, null, e);
    }
  }

  /** Before the state is checkpointed: expired values are not written. */
  beforeCheckpoint(): void {
    this.expire(this.ctx.processingTime());
  }

  restored(): void {
    this.wasRestored = true;
    migrateLegacyEntries(
      this.entries,
      this.node.states.map((s) => s.name),
    );
    const { times, texts } = this.scope.restored();
    this.timers.addAll(times, texts);
  }

  stateCounters(): StateOperatorCounters {
    const m = this.entries.metrics();
    return {
      operatorId: this.op.id,
      operatorName: 'transformWithStateExec',
      // A row per state variable holding a value for a key, and per key with timers.
      numRowsTotal: this.scope.rows,
      numRowsUpdated: m.numRowsUpdated,
      numRowsRemoved: m.numRowsRemoved,
      numRowsDroppedByWatermark: this.dropped,
      memoryUsedBytes: m.memoryUsedBytes,
    };
  }

  /** The task starts (after a restore): a first run hands the task's keys of the initial state over. */
  start(): void {
    this.heard = this.ctx.watermark();
    const initial = this.node.initialState;
    if (initial === undefined || this.wasRestored) return;
    const entries = typeof initial === 'function' ? initial() : initial;
    const times = new Times(this.ctx.processingTime(), this.ctx.watermark());
    const now = this.ctx.processingTime();
    for (const [key, state] of entries) {
      if (partitionOf(stableHash(key), this.ctx.partitions) !== this.ctx.partition) continue;
      this.scope.begin(key, keyText(key), now);
      this.runHandler({ key, initialState: state }, () =>
        this.processor.handleInitialState(key, state, times),
      );
    }
  }

  private registerTimer(ms: number): void {
    if (this.node.timeMode === 'none')
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        "registerTimer: timers need timeMode 'processingTime' or 'eventTime', not 'none'",
      );
    if (!Number.isFinite(ms)) throw invalidArgument(`registerTimer: expected a time in ms, got ${ms}`);
    const t = this.scope.entry?.t;
    if (t?.includes(ms)) return;
    const x = this.scope.writable();
    if (x.t === NO_TIMERS) {
      x.t = [ms];
      this.scope.timersHeld(1);
    } else {
      let i = x.t.length;
      while (i > 0 && x.t[i - 1]! > ms) i--;
      x.t.splice(i, 0, ms);
    }
    this.timers.add(ms, this.scope.text);
  }

  private deleteTimer(ms: number): void {
    const i = this.scope.entry === null ? -1 : this.scope.entry.t.indexOf(ms);
    if (i < 0) return;
    this.dropTimer(i);
    this.timers.remove(ms, this.scope.text);
  }

  /** Removes the key's `i`-th timer from its entry (not from the timer index). */
  private dropTimer(i: number): void {
    const x = this.scope.writable();
    if (x.t.length > 1) {
      x.t.splice(i, 1);
      return;
    }
    x.t = NO_TIMERS;
    this.scope.timersHeld(-1);
  }

  /**
   * Fires every timer due at or before `upTo` (processing time or watermark, by timeMode), in time
   * order. Timers registered while firing wait for the next call, so a timer that re-registers
   * itself at a due time cannot loop.
   */
  private fireTimers(upTo: number, now: number): void {
    if (this.timers.first() > upTo) return;
    const due: [string, number][] = [];
    this.timers.closeUpTo(upTo, (text, time) => due.push([text, time]));
    const watermark = this.ctx.watermark();
    const scope = this.scope;
    for (const [text, time] of due) {
      const x = this.entries.get(text);
      const i = x === undefined ? -1 : x.t.indexOf(time);
      if (i < 0) continue; // deleted, or fired already
      const key = x!.k;
      scope.begin(key, text, now, x);
      this.dropTimer(i);
      const times = new Times(now, watermark, time);
      this.runHandler({ key, timer: time }, () => this.processor.handleExpiredTimer(key, times, times));
    }
  }

  /** Removes the values whose TTL has run out by `now`. */
  private expire(now: number): void {
    if (this.expiries.first() > now) return;
    const due: [string, number][] = [];
    this.expiries.closeUpTo(now, (k, time) => due.push([k, time]));
    for (const [k, time] of due) this.scope.sweep(k, time, now);
  }

  /**
   * Runs a handler of the key the scope has begun, then ends the key: what the handler returns or
   * yields is collected, the key's entry written back, and only then are the rows passed on. A
   * throw of the handler makes `what` a bad record: its rows are not emitted (the state it changed
   * before it threw is kept). So does state the handler left that cannot be packed
   * (`STATE_NOT_ENCODABLE`), and then the key keeps the state it had before the handler.
   */
  private runHandler(what: unknown, call: () => unknown): void {
    let rows: unknown[] | null = null;
    let failure: unknown = null;
    try {
      rows = drained(call());
    } catch (e) {
      failure = e;
    }
    this.endHandler(what, rows, failure);
  }

  /** Ends the key of a handler that returned `rows` or threw `failure` (see {@link runHandler}). */
  private endHandler(what: unknown, rows: unknown[] | null, failure: unknown): void {
    try {
      this.scope.end();
    } catch (e) {
      failure ??= new MillraceError(
        ErrorCode.STATE_NOT_ENCODABLE,
        `transformWithState: the state of key ${JSON.stringify(this.scope.key) ?? String(this.scope.key)} cannot be kept ` +
          `(${(e as Error).message}); state values are plain data: numbers, strings, booleans, arrays, ` +
          'plain objects, Date, Uint8Array',
        { cause: e },
      );
    }
    if (failure !== null) {
      this.ctx.badRecord(this.op, what, failure);
      return;
    }
    if (rows === null) return;
    const column = this.node.eventTimeColumn;
    for (let i = 0; i < rows.length; i++) {
      if (column === undefined || this.inTime(rows[i], column)) this.next.push(rows[i]);
    }
  }
}

function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}

/**
 * What a handler returned or yielded, as an array (null: nothing). Drained before anything goes on:
 * a generator's throw is the processor's, not downstream's.
 */
function drained(out: unknown): unknown[] | null {
  if (out == null) return null;
  return Array.isArray(out) ? out : [...(out as Iterable<unknown>)];
}
