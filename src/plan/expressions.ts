import { invalidArgument } from '../errors.js';
import type { ArrowUdfCall } from './arrow-udf.js';

/**
 * A column expression, used by `select` and `withColumn`:
 * - a string names a column of the input row (`'amount'`);
 * - a function computes a value from the whole row (`(p) => p.amount * 100`);
 * - `lit(value)` is a constant;
 * - a scalar UDF applied to expressions (`riskScore('amount', 'country')`);
 * - an Arrow UDF (`arrowUdf(fn, { input, returns })`), batched on the UDF threads: only as a whole
 *   column of `withColumn` or `select`, never inside another expression;
 * - `windowTime(column)`: the event time of a window column (its end − 1 ms).
 */
export type ColumnExpr<T = any> =
  | string
  | ((row: T) => unknown)
  | Literal
  | UdfCall
  | ArrowUdfCall
  | WindowTimeExpr;

export interface Literal {
  readonly kind: 'lit';
  readonly value: unknown;
}

export interface UdfCall {
  readonly kind: 'udf';
  readonly udf: ScalarUdf;
  readonly args: readonly ColumnExpr[];
}

/** A named scalar user-defined function: called once per row with the values of its arguments. */
export interface ScalarUdf<A extends unknown[] = any[], R = unknown> {
  (...args: ColumnExpr[]): UdfCall;
  readonly udfName: string;
  readonly fn: (...args: A) => R;
}

/** `windowTime(column)`: the event time of the window in `column`. */
export interface WindowTimeExpr {
  readonly kind: 'windowTime';
  readonly column: string;
}

/**
 * The event time of a window row, `window.end − 1` ms (Spark's `window_time`): the last instant
 * the window covers. It keeps the watermark of the window's own event time, so a windowed
 * aggregation's output can be windowed again, or deduplicated, without a second `withWatermark`.
 * Usable wherever a column expression goes, and as the column of `window(...)`.
 *
 * @example
 * perMinute.groupBy(window(windowTime('window'), '10 minutes'), 'cardId').agg({ n: agg.sum('n') })
 */
export function windowTime(column: string): WindowTimeExpr {
  if (typeof column !== 'string' || column === '')
    throw invalidArgument('windowTime(column): name the column that holds a window');
  return Object.freeze({ kind: 'windowTime', column });
}

/** The event time of a window value, or null when `w` is not a window. */
export function windowEventTime(w: unknown): number | null {
  if (typeof w !== 'object' || w === null) return null;
  const end = (w as { end?: unknown }).end;
  return typeof end === 'number' ? end - 1 : null;
}

export function isWindowTime(e: unknown): e is WindowTimeExpr {
  return typeof e === 'object' && e !== null && (e as { kind?: unknown }).kind === 'windowTime';
}

/** A constant column. @example stream.withColumn('source', lit('web')) */
export function lit(value: unknown): Literal {
  return Object.freeze({ kind: 'lit', value });
}

/**
 * Defines a scalar UDF. Its name appears in plans and in errors when it throws.
 *
 * @example
 * const risk = udf('risk', (amount: number, country: string) => (country === 'XX' ? 1 : amount / 1e4));
 * payments.withColumn('risk', risk('amount', 'country'));
 */
export function udf<A extends unknown[], R>(name: string, fn: (...args: A) => R): ScalarUdf<A, R> {
  if (typeof name !== 'string' || name === '')
    throw invalidArgument('udf(name, fn): name must be a non-empty string');
  if (typeof fn !== 'function') throw invalidArgument(`udf('${name}', fn): fn must be a function`);
  const call = (...args: ColumnExpr[]): UdfCall => {
    for (const a of args) {
      checkExpr(a, `${name}(...)`);
      if (isArrowUdf(a))
        throw invalidArgument(
          `${name}(...): an Arrow UDF is a whole column; it cannot be a scalar UDF's argument`,
        );
    }
    return Object.freeze({ kind: 'udf', udf: callable, args: Object.freeze([...args]) });
  };
  const callable = Object.assign(call, { udfName: name, fn }) as ScalarUdf<A, R>;
  return Object.freeze(callable);
}

export function checkExpr(e: unknown, where: string): asserts e is ColumnExpr {
  if (typeof e === 'string' || typeof e === 'function') return;
  if (typeof e === 'object' && e !== null && isExprKind((e as { kind?: unknown }).kind)) return;
  throw invalidArgument(
    `${where}: expected a column name, a function of the row, lit(value), a UDF call or an Arrow UDF`,
  );
}

/** Whether `kind` tags an expression object (the rest are plain objects of another meaning). */
export function isExprKind(kind: unknown): boolean {
  return kind === 'lit' || kind === 'udf' || kind === 'arrowUdf' || kind === 'windowTime';
}

export function isArrowUdf(e: unknown): e is ArrowUdfCall {
  return typeof e === 'object' && e !== null && (e as { kind?: unknown }).kind === 'arrowUdf';
}

/** Compiles an expression into a function of the row (once, at task start; never per row). */
export function compileExpr(e: ColumnExpr): (row: any) => unknown {
  if (typeof e === 'string') return (row) => (row == null ? undefined : row[e]);
  if (typeof e === 'function') return e;
  if (e.kind === 'lit') {
    const v = e.value;
    return () => v;
  }
  if (e.kind === 'arrowUdf') throw new Error(`internal: Arrow UDF '${e.name}' runs batched, not per row`);
  if (e.kind === 'windowTime') {
    const column = e.column;
    return (row) => (row == null ? null : windowEventTime(row[column]));
  }
  const fn = e.udf.fn;
  const args = e.args.map(compileExpr);
  switch (args.length) {
    case 0:
      return () => fn();
    case 1: {
      const a = args[0]!;
      return (row) => fn(a(row));
    }
    case 2: {
      const a = args[0]!;
      const b = args[1]!;
      return (row) => fn(a(row), b(row));
    }
    default:
      return (row) => fn(...args.map((g) => g(row)));
  }
}

/** Human-readable form for plans and errors. */
export function describeExpr(e: ColumnExpr): string {
  if (typeof e === 'string') return e;
  if (typeof e === 'function') return e.name ? `${e.name}(row)` : '<function>';
  if (e.kind === 'lit') return JSON.stringify(e.value) ?? String(e.value);
  if (e.kind === 'arrowUdf') return `arrowUdf ${e.name}(${e.input.join(', ')})`;
  if (e.kind === 'windowTime') return `windowTime(${e.column})`;
  return `${e.udf.udfName}(${e.args.map(describeExpr).join(', ')})`;
}

/** Names of the UDFs an expression calls (for error locations). */
export function udfNames(e: ColumnExpr): string[] {
  if (typeof e === 'object' && e.kind === 'udf') return [e.udf.udfName, ...e.args.flatMap(udfNames)];
  if (typeof e === 'object' && e.kind === 'arrowUdf') return [e.name];
  return [];
}
