import { ErrorCode, invalidArgument, MillraceError } from '../errors.js';
import { type Duration, parseDuration } from '../util/duration.js';

/**
 * `transformWithState`'s user code (docs/stateful-processing.md): a class with Spark's method names. The engine makes
 * one instance per task (a shallow copy of the one given, or one from a factory), gives it a
 * {@link ProcessorHandle} in `init`, and calls it with the rows of one key at a time. Only
 * `handleInputRows` must be written: `init`, `handleExpiredTimer`, `handleInitialState` and
 * `close` do nothing unless overridden.
 *
 * @example
 * class CardGuard extends StatefulProcessor<string, Payment, Alert> {
 *   private last!: ValueState<number>;
 *   override init(h: ProcessorHandle) { this.last = h.valueState<number>('lastTs', { ttl: '1 hour' }); }
 *   *handleInputRows(card: string, rows: Iterable<Payment>, t: TimerValues) { ... yield alert; }
 * }
 */
export abstract class StatefulProcessor<K = unknown, I = unknown, O = unknown, S = unknown> {
  /** @internal set by the engine before `init`. */
  handle: ProcessorHandle | undefined;

  /**
   * Declares state (and nothing else: it also runs once on the driver to learn the state schema).
   * By default it declares none.
   */
  init(_handle: ProcessorHandle): void {}

  /**
   * The rows of one key. Real-time mode: once per row (`rows` yields exactly one). Micro-batch mode:
   * once per key per batch, with all of the key's rows of the batch in arrival order. Returns (or
   * yields) the output rows; `undefined` for none.
   */
  abstract handleInputRows(key: K, rows: Iterable<I>, timerValues: TimerValues): Iterable<O> | undefined;

  /** A timer of `key` expired. The timer is already deleted; register another to fire again. */
  handleExpiredTimer(_key: K, _timerValues: TimerValues, _timer: ExpiredTimer): Iterable<O> | undefined {
    return undefined;
  }

  /** One key's initial state (`initialState` option), on the first run of the query only. */
  handleInitialState(_key: K, _initialState: S, _timerValues: TimerValues): void {}

  /** The task ends. */
  close(): void {}

  /** The handle given to `init`. */
  getHandle(): ProcessorHandle {
    if (this.handle === undefined)
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        'getHandle(): the processor has no handle yet; the engine gives it one before init()',
      );
    return this.handle;
  }
}

/** Creates state and timers. State and timer calls act on the key being processed. */
export interface ProcessorHandle {
  valueState<T>(name: string, options?: StateOptions): ValueState<T>;
  listState<T>(name: string, options?: StateOptions): ListState<T>;
  mapState<MK, MV>(name: string, options?: StateOptions): MapState<MK, MV>;
  /** Registers a timer of the current key at `expiryMs` (processing or event time, by timeMode). */
  registerTimer(expiryMs: number): void;
  deleteTimer(expiryMs: number): void;
  /** The current key's timers, ascending. */
  listTimers(): number[];
  /** The key being processed. */
  getCurrentKey(): unknown;
}

export interface StateOptions {
  /** Time to live, in processing time, reset on every write; an expired value reads as absent. */
  ttl?: Duration;
}

export interface ValueState<T> {
  get(): T | undefined;
  update(value: T): void;
  exists(): boolean;
  clear(): void;
}

export interface ListState<T> {
  get(): Iterable<T>;
  put(values: readonly T[]): void;
  appendValue(value: T): void;
  appendList(values: readonly T[]): void;
  exists(): boolean;
  clear(): void;
}

export interface MapState<K, V> {
  getValue(key: K): V | undefined;
  containsKey(key: K): boolean;
  updateValue(key: K, value: V): void;
  removeKey(key: K): void;
  keys(): Iterable<K>;
  values(): Iterable<V>;
  iterator(): Iterable<[K, V]>;
  exists(): boolean;
  clear(): void;
}

/** Time as the processor sees it; −1 when not available. */
export interface TimerValues {
  getCurrentProcessingTimeInMs(): number;
  getCurrentWatermarkInMs(): number;
}

export interface ExpiredTimer {
  getExpiryTimeInMs(): number;
}

export type TimeMode = 'none' | 'processingTime' | 'eventTime';

/** A processor, or a function making one per task. */
export type ProcessorSource<K, I, O, S> =
  | StatefulProcessor<K, I, O, S>
  | (() => StatefulProcessor<K, I, O, S>);

export interface TransformWithStateOptions<K, S> {
  timeMode: TimeMode;
  /** The operator's output mode; the query's must be the same. */
  outputMode: 'append' | 'update';
  /** Initial state per key, given to `handleInitialState` on the query's first run. */
  initialState?: Iterable<readonly [K, S]> | (() => Iterable<readonly [K, S]>);
  /**
   * Real-time mode, processing-time timers: `'onArrival'` (default, Spark's) fires due timers when a
   * row reaches the task; `'wallClock'` also fires them from an idle tick of the task, without data.
   */
  timerFiring?: 'onArrival' | 'wallClock';
  /**
   * The column of the output rows that holds their event time (Spark's `eventTimeColumnName`):
   * the watermark carries on through it, so an operator after this one (a windowed aggregation, a
   * deduplication…) can judge and evict by it without a second `withWatermark`. Needs a watermark
   * before `groupByKey`. Each output row must hold there a time later than the watermark the next
   * operator judges late rows by (docs/stateful-processing.md); one that does not is a bad record,
   * `EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED`.
   */
  eventTimeColumn?: string;
  /** A label for plans and error messages. */
  name?: string;
}

export type StateKind = 'value' | 'list' | 'map';

/** A state variable as declared in `init`: the state schema the checkpoint keeps. */
export interface StateDeclaration {
  readonly name: string;
  readonly kind: StateKind;
  readonly ttlMs: number | null;
}

const STATE_NAME = /^[A-Za-z0-9_.-]+$/;

/** The processor of one task: a factory's product, or a shallow copy of the given instance. */
export function processorInstance<K, I, O, S>(
  source: ProcessorSource<K, I, O, S>,
): StatefulProcessor<K, I, O, S> {
  if (typeof source === 'function') {
    const p = source();
    if (typeof p !== 'object' || p === null)
      throw invalidArgument(
        `transformWithState: the factory must return a StatefulProcessor, got ${p === null ? 'null' : typeof p}`,
      );
    checkProcessor(p, 'the processor the factory returned');
    return withDefaults(p);
  }
  checkProcessor(source, 'the processor');
  return withDefaults(
    Object.assign(Object.create(Object.getPrototypeOf(source)), source) as StatefulProcessor<K, I, O, S>,
  );
}

/** Refuses a processor without `handleInputRows`, the one method with no default, naming it. */
export function checkProcessor(p: object, what: string): void {
  if (typeof (p as StatefulProcessor).handleInputRows !== 'function')
    throw invalidArgument(
      `transformWithState: ${what} (${describeObject(p)}) has no handleInputRows(key, rows, timerValues) ` +
        'method; it is the one method a StatefulProcessor must define',
    );
}

const DEFAULTED = ['init', 'handleExpiredTimer', 'handleInitialState', 'close'] as const;

/**
 * A processor that does not extend StatefulProcessor (an object with `handleInputRows` only) gets
 * the class's default for each method it lacks.
 */
function withDefaults<P extends StatefulProcessor<any, any, any, any>>(p: P): P {
  const methods = p as unknown as Record<string, unknown>;
  const defaults = StatefulProcessor.prototype as unknown as Record<string, unknown>;
  for (const m of DEFAULTED) if (typeof methods[m] !== 'function') methods[m] = defaults[m];
  return p;
}

function describeObject(p: object): string {
  const name = (p as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? `class ${name}` : 'a plain object';
}

/**
 * Runs `init` on a fresh processor with a handle that only records what it declares: the state
 * schema, known on the driver before any task runs (for the checkpoint's evolution checks).
 */
export function declaredStates(source: ProcessorSource<any, any, any, any>): StateDeclaration[] {
  const states: StateDeclaration[] = [];
  const declare = (kind: StateKind) => (name: string, options?: StateOptions) => {
    states.push(declaration(name, kind, options, states));
    return new Proxy(
      {},
      {
        get: () => () => {
          throw new MillraceError(
            ErrorCode.UNSUPPORTED_OPERATION,
            `state '${name}' can only be used while a key is processed, not in init()`,
          );
        },
      },
    );
  };
  const noKey = () => {
    throw new MillraceError(
      ErrorCode.UNSUPPORTED_OPERATION,
      'timers and the current key can only be used while a key is processed, not in init()',
    );
  };
  const handle = {
    valueState: declare('value'),
    listState: declare('list'),
    mapState: declare('map'),
    registerTimer: noKey,
    deleteTimer: noKey,
    listTimers: noKey,
    getCurrentKey: noKey,
  } as unknown as ProcessorHandle;
  const p = processorInstance(source);
  p.handle = handle;
  p.init(handle);
  return states;
}

/** Checks one declaration: a valid, unique name and a positive TTL. */
export function declaration(
  name: string,
  kind: StateKind,
  options: StateOptions | undefined,
  earlier: readonly StateDeclaration[],
): StateDeclaration {
  if (typeof name !== 'string' || !STATE_NAME.test(name))
    throw invalidArgument(
      `${kind}State(name): the name must match ${STATE_NAME}, got ${JSON.stringify(name)}`,
    );
  if (earlier.some((s) => s.name === name))
    throw invalidArgument(`${kind}State('${name}'): a state of this processor already has that name`);
  const ttlMs = options?.ttl === undefined ? null : parseDuration(options.ttl, `${kind}State('${name}') ttl`);
  if (ttlMs !== null && ttlMs <= 0) throw invalidArgument(`${kind}State('${name}'): ttl must be positive`);
  return Object.freeze({ name, kind, ttlMs });
}
