import type { RecordBatch } from 'apache-arrow';
import type { SinkSpec } from '../connectors/spec.js';
import { invalidArgument } from '../errors.js';
import { type AggregateSpec, agg } from '../plan/aggregates.js';
import { type ArrowBatchOptions, checkBatchSize, checkIsolate } from '../plan/arrow-udf.js';
import { type ColumnExpr, checkExpr, isExprKind } from '../plan/expressions.js';
import type { KeySpec, LogicalNode } from '../plan/nodes.js';
import type { ProcessorSource, TransformWithStateOptions } from '../plan/stateful-processor.js';
import type { AnyWindow } from '../plan/window.js';
import { type Duration, parseDuration } from '../util/duration.js';
import { aggregateNode, groupingOf } from './grouping.js';
import {
  type StaticJoinOptions,
  type StaticTable,
  type StreamJoinOptions,
  staticJoinNode,
  streamJoinNode,
} from './join.js';
import { transformWithStateNode } from './transform-with-state.js';
import { StreamWriter } from './writer.js';

/** Options every operator accepts. */
export interface OperatorOptions {
  /** A label for plans and error messages, e.g. `'enrich'`. */
  name?: string;
}

/**
 * An unbounded stream of rows of type `T`. Immutable: every method returns a new Stream and leaves
 * this one as it was, so a stream can be the start of several branches.
 *
 * @example
 * job.readStream(sources.memory<Payment>({ name: 'payments' }))
 *   .filter((p) => p.amount > 0)
 *   .withColumn('cents', (p) => Math.round(p.amount * 100))
 *   .writeStream(sinks.memory({ name: 'out' }));
 */
export class Stream<T = any> {
  /** @internal */
  constructor(readonly node: LogicalNode) {
    Object.freeze(this);
  }

  /** One output row per input row. */
  map<U>(fn: (row: T) => U, options: OperatorOptions = {}): Stream<U> {
    checkFn('map', fn);
    return new Stream<U>(Object.freeze({ kind: 'map', input: this.node, fn, label: label(options) }));
  }

  /** Keeps the rows for which `fn` returns a truthy value. */
  filter(fn: (row: T) => unknown, options: OperatorOptions = {}): Stream<T> {
    checkFn('filter', fn);
    return new Stream<T>(Object.freeze({ kind: 'filter', input: this.node, fn, label: label(options) }));
  }

  /** Zero or more output rows per input row (`fn` returns an iterable, or null/undefined for none). */
  flatMap<U>(fn: (row: T) => Iterable<U> | null | undefined, options: OperatorOptions = {}): Stream<U> {
    checkFn('flatMap', fn);
    return new Stream<U>(Object.freeze({ kind: 'flatMap', input: this.node, fn, label: label(options) }));
  }

  /**
   * Batches of rows as Arrow `RecordBatch`es to `fn` (on the task's thread, or with `isolate` on the
   * query's UDF threads); `fn` returns a batch, a
   * table or an iterable of them, with any number of rows. The batch's columns are those of the
   * first row (plain-object rows of one shape). `maxRecordsPerBatch` overrides the query's
   * `arrowMaxRecordsPerBatch`.
   */
  mapInArrow<U = any>(
    fn: (batch: RecordBatch) => unknown,
    options: OperatorOptions & ArrowBatchOptions = {},
  ): Stream<U> {
    checkFn('mapInArrow', fn);
    const maxRecordsPerBatch = checkBatchSize(options.maxRecordsPerBatch, 'mapInArrow');
    return new Stream<U>(
      Object.freeze({
        kind: 'mapInArrow',
        input: this.node,
        fn,
        maxRecordsPerBatch,
        label: label(options),
        ...checkIsolate(options.isolate, 'mapInArrow'),
      }),
    );
  }

  /**
   * The rows each partition receives in one trigger, all at once, to `fn`; what it returns goes on
   * at the trigger's end. Micro-batch mode only: in real-time mode (which never ends a batch) it is
   * refused with `REAL_TIME_MODE_UNSUPPORTED_OPERATOR` — use a UDF or `arrowUdf` there.
   */
  mapPartitions<U>(
    fn: (rows: Iterable<T>) => Iterable<U> | null | undefined,
    options: OperatorOptions = {},
  ): Stream<U> {
    checkFn('mapPartitions', fn);
    return new Stream<U>(
      Object.freeze({ kind: 'mapPartitions', input: this.node, fn, label: label(options) }),
    );
  }

  /**
   * Projects plain-object rows: `select('cardId', 'amount')` keeps those columns;
   * `select({ card: 'cardId', cents: (p) => p.amount * 100 })` names each output column.
   */
  select(...columns: string[]): Stream<any>;
  select(columns: Record<string, ColumnExpr<T>>): Stream<any>;
  select(...args: unknown[]): Stream<any> {
    let columns: { name: string; expr: ColumnExpr }[];
    if (args.length === 1 && typeof args[0] === 'object' && args[0] !== null && !isExprObject(args[0])) {
      columns = Object.entries(args[0] as Record<string, unknown>).map(([name, expr]) => {
        checkExpr(expr, `select({ ${name} })`);
        return { name, expr };
      });
    } else {
      columns = args.map((c, i) => {
        if (typeof c !== 'string') throw invalidArgument(`select: argument ${i + 1} must be a column name`);
        return { name: c, expr: c };
      });
    }
    if (columns.length === 0) throw invalidArgument('select: name at least one column');
    const frozen = Object.freeze(columns.map((c) => Object.freeze(c)));
    return new Stream(Object.freeze({ kind: 'select', input: this.node, columns: frozen, label: undefined }));
  }

  /** Adds (or replaces) one column computed from the row. */
  withColumn(name: string, expr: ColumnExpr<T>): Stream<any> {
    if (typeof name !== 'string' || name === '')
      throw invalidArgument('withColumn: the column name must be a non-empty string');
    checkExpr(expr, `withColumn('${name}')`);
    return new Stream(
      Object.freeze({ kind: 'withColumn', input: this.node, column: name, expr, label: undefined }),
    );
  }

  /**
   * Redistributes rows by a stable hash of `key` over `partitions` tasks of the next stage (a thread
   * hop). Rows with equal keys go to the same partition, in the order they arrived from each input.
   */
  repartition(key: KeySpec, partitions?: number): Stream<T> {
    checkKey('repartition', key);
    if (partitions !== undefined && (!Number.isInteger(partitions) || partitions < 1)) {
      throw invalidArgument(
        `repartition: partitions must be a positive integer, got ${JSON.stringify(partitions)}`,
      );
    }
    const frozenKey = Array.isArray(key) ? Object.freeze([...key]) : key;
    return new Stream<T>(
      Object.freeze({ kind: 'repartition', input: this.node, key: frozenKey, partitions, label: undefined }),
    );
  }

  /**
   * Declares `column` (ms since the epoch, or a Date) as this stream's event time: the watermark
   * is the largest event time seen minus `delay`, but never past the rows of a source partition
   * that still has input to read (a backlog after a restart), and stateful operators downstream
   * treat rows at or below it as late (dropped, or sent to the late rows) and evict state behind
   * it. With `idleTimeout`, an input that has seen no row that long after the start no longer
   * holds back the minimum over several inputs, nor a lagging partition whose watermark has not
   * moved that long the watermark of its input.
   *
   * @example stream.withWatermark('ts', '15 minutes')
   */
  withWatermark(column: string, delay: Duration, options: { idleTimeout?: Duration } = {}): Stream<T> {
    if (typeof column !== 'string' || column === '')
      throw invalidArgument('withWatermark: name the event-time column');
    const delayMs = parseDuration(delay, 'withWatermark delay');
    const idleTimeoutMs =
      options.idleTimeout === undefined
        ? undefined
        : parseDuration(options.idleTimeout, 'withWatermark idleTimeout');
    return new Stream<T>(
      Object.freeze({
        kind: 'watermark',
        input: this.node,
        column,
        delayMs,
        idleTimeoutMs,
        label: undefined,
      }),
    );
  }

  /**
   * Groups rows by columns and/or one time window, for `.agg({...})`. Rows are redistributed by the
   * grouping columns first (a thread hop), so each group lives in one task.
   *
   * @example stream.groupBy(window('ts', '1 hour'), 'storeId').agg({ total: agg.sum('amount') })
   */
  groupBy(...keys: (string | AnyWindow)[]): GroupedStream {
    const { keys: columns, window } = groupingOf(keys);
    if (columns.length === 0 && window === undefined)
      throw invalidArgument('groupBy: name at least one column or a window');
    return new GroupedStream(this.node, Object.freeze(columns), window);
  }

  /**
   * Groups rows by `key(row)` for `.transformWithState(...)`: rows of one key meet in one task (a
   * hash shuffle by the key, a thread hop). The key should be a string or a number.
   *
   * @example payments.groupByKey((p) => p.cardId).transformWithState(new CardGuard(), options)
   */
  groupByKey<K>(key: (row: T) => K): KeyedStream<K, T> {
    checkFn('groupByKey', key);
    return new KeyedStream<K, T>(this.node, key);
  }

  /**
   * Passes on the first row of each key (the given columns, or the whole row) and drops the rest.
   * With a watermark on one of the columns, rows behind it are late and keys behind it are
   * forgotten; without one, every key is remembered for ever.
   *
   * @example stream.withWatermark('ts', '1 hour').dropDuplicates('txId', 'ts')
   */
  dropDuplicates(...columns: string[]): Stream<T> {
    return this.dedup('dropDuplicates', columns, false);
  }

  /**
   * Drops rows whose key (the given columns, or the whole row) was seen within the watermark delay:
   * a key is remembered until the watermark passes its first row's event time plus the delay.
   * Needs `withWatermark` upstream.
   *
   * @example stream.withWatermark('ts', '10 minutes').dropDuplicatesWithinWatermark('txId')
   */
  dropDuplicatesWithinWatermark(...columns: string[]): Stream<T> {
    return this.dedup('dropDuplicatesWithinWatermark', columns, true);
  }

  private dedup(op: string, columns: string[], withinWatermark: boolean): Stream<T> {
    for (const c of columns) {
      if (typeof c !== 'string' || c === '') throw invalidArgument(`${op}: columns must be non-empty names`);
    }
    return new Stream<T>(
      Object.freeze({
        kind: 'dedup',
        input: this.node,
        keys: Object.freeze([...new Set(columns)]),
        withinWatermark,
        label: undefined,
      }),
    );
  }

  /**
   * The rows of this stream and `other`, as one stream. The two must read different sources. With
   * watermarks on both, stateful operators downstream use the query's multipleWatermarkPolicy
   * over them (the minimum by default).
   *
   * @example payments.union(refunds).withWatermark('ts', '1 minute').groupBy(...)
   */
  union<U>(other: Stream<U>): Stream<T | U> {
    if (!(other instanceof Stream)) throw invalidArgument('union(other): pass another stream');
    return new Stream<T | U>(
      Object.freeze({ kind: 'union', input: this.node, other: other.node, label: undefined }),
    );
  }

  /**
   * Joins this stream with a static table (loaded once per worker thread, indexed by the key): each
   * row goes on once per table row with the same key (`inner`), or once with the right side missing
   * when none has it (`leftOuter`). Works in both execution modes, without a shuffle.
   *
   * @example stream.join(statics.fromFile('merchants.csv', { format: 'csv' }), { on: 'merchantId' })
   */
  join<R = any, U = any>(table: StaticTable<R>, options: StaticJoinOptions<T, R, U>): Stream<U>;
  /**
   * Joins this stream (left) with another stream (right) on equal keys and an event-time range.
   * Both streams need a watermark on their time column; each side's rows are kept in state until
   * the watermark makes a match impossible, and an outer join emits an unmatched row then. Both
   * sides are shuffled by the key. Append output mode only.
   *
   * @example
   * impressions.withWatermark('impressionTs', '10 minutes').join(
   *   clicks.withWatermark('clickTs', '20 minutes'),
   *   { on: 'adId', type: 'leftOuter',
   *     between: { left: 'impressionTs', right: 'clickTs', lower: 0, upper: '1 hour' } })
   */
  join<R = any, U = any>(other: Stream<R>, options: StreamJoinOptions<T, R, U>): Stream<U>;
  join(other: Stream | StaticTable, options: StreamJoinOptions | StaticJoinOptions): Stream<any> {
    if (other instanceof Stream)
      return new Stream(streamJoinNode(this.node, other.node, options as StreamJoinOptions));
    if (typeof other !== 'object' || other === null || (other.kind !== 'file' && other.kind !== 'function')) {
      throw invalidArgument(
        'join: pass another stream, or a static table from statics.fromFile / fromFunction',
      );
    }
    return new Stream(staticJoinNode(this.node, other, options as StaticJoinOptions));
  }

  /** Starts describing where the rows go. */
  writeStream(sink: SinkSpec): StreamWriter {
    return StreamWriter.create(this.node, sink);
  }
}

/**
 * The result of `groupBy(...)`: name the aggregates to compute per group. Output rows hold the
 * grouping columns by name, `window: { start, end }` when grouping by a time window, then the
 * aggregates by the names given.
 */
export class GroupedStream {
  /** @internal */
  constructor(
    private readonly input: LogicalNode,
    private readonly keys: readonly string[],
    private readonly window: AnyWindow | undefined,
  ) {
    Object.freeze(this);
  }

  /** @example grouped.agg({ total: agg.sum('amount'), n: agg.count() }) */
  agg(aggregates: Record<string, AggregateSpec>): Stream<any> {
    return new Stream(aggregateNode(this.input, this.keys, this.window, aggregates));
  }

  /** Shorthand for `agg({ count: agg.count() })`. */
  count(): Stream<any> {
    return this.agg({ count: agg.count() });
  }
}

/**
 * The result of `groupByKey(fn)`: rows with the same `fn(row)` meet in one task (a hash shuffle by
 * the key), where a {@link StatefulProcessor} keeps state and timers per key.
 */
export class KeyedStream<K = unknown, T = any> {
  /** @internal */
  constructor(
    private readonly input: LogicalNode,
    private readonly key: (row: T) => K,
  ) {
    Object.freeze(this);
  }

  /**
   * Runs `processor` over each key's rows with per-key state and timers (docs/stateful-processing.md).
   *
   * @example
   * payments.groupByKey((p) => p.cardId)
   *   .transformWithState(new CardGuard(), { timeMode: 'processingTime', outputMode: 'append' })
   */
  transformWithState<O, S = unknown>(
    processor: ProcessorSource<K, T, O, S>,
    options: TransformWithStateOptions<K, S>,
  ): Stream<O> {
    return new Stream<O>(transformWithStateNode(this.input, this.key, processor, options));
  }
}

function label(options: OperatorOptions): string | undefined {
  if (options.name !== undefined && typeof options.name !== 'string')
    throw invalidArgument('name must be a string');
  return options.name;
}

function checkFn(op: string, fn: unknown): void {
  if (typeof fn !== 'function') throw invalidArgument(`${op}: expected a function, got ${typeof fn}`);
}

function isExprObject(v: object): boolean {
  return isExprKind((v as { kind?: unknown }).kind);
}

export function checkKey(op: string, key: unknown): asserts key is KeySpec {
  if (typeof key === 'string' && key !== '') return;
  if (typeof key === 'function') return;
  if (Array.isArray(key) && key.length > 0 && key.every((k) => typeof k === 'string' && k !== '')) return;
  throw invalidArgument(
    `${op}: the key must be a column name, a non-empty array of column names, or a function of the row`,
  );
}
