import { invalidArgument } from '../errors.js';

/**
 * A user-defined aggregation, Spark's Aggregator: `zero()` starts a group, `add` folds a value in,
 * `merge` combines two partial states (session windows merging), `result` makes the output value.
 * `add` and `merge` may update the state in place and return it.
 */
export interface Aggregator<S = any, V = any, R = any> {
  zero(): S;
  add(state: S, value: V): S;
  merge(a: S, b: S): S;
  result(state: S): R;
}

/** One aggregate of `agg({...})`: which column it reads and how it folds. */
export interface AggregateSpec {
  readonly kind: 'aggregate';
  /** Shown in plans: `sum(amount)`. */
  readonly description: string;
  /** The column it reads; undefined for `count()`, which counts rows. */
  readonly column: string | undefined;
  readonly aggregator: Aggregator;
}

function spec(description: string, column: string | undefined, aggregator: Aggregator): AggregateSpec {
  if (column !== undefined && (typeof column !== 'string' || column === '')) {
    throw invalidArgument(`${description}: name a column`);
  }
  return Object.freeze({ kind: 'aggregate', description, column, aggregator: Object.freeze(aggregator) });
}

const COUNT: Aggregator<number, unknown, number> = {
  zero: () => 0,
  add: (n) => n + 1,
  merge: (a, b) => a + b,
  result: (n) => n,
};

const COUNT_NON_NULL: Aggregator<number, unknown, number> = {
  zero: () => 0,
  add: (n, v) => (v == null ? n : n + 1),
  merge: (a, b) => a + b,
  result: (n) => n,
};

const SUM: Aggregator<number | null, number, number | null> = {
  zero: () => null,
  add: (s, v) => (v == null ? s : (s ?? 0) + v),
  merge: (a, b) => (a == null ? b : b == null ? a : a + b),
  result: (s) => s,
};

const AVG: Aggregator<[number, number], number, number | null> = {
  zero: () => [0, 0],
  add: (s, v) => {
    if (v != null) {
      s[0] += v;
      s[1]++;
    }
    return s;
  },
  merge: (a, b) => [a[0] + b[0], a[1] + b[1]],
  result: (s) => (s[1] === 0 ? null : s[0] / s[1]),
};

// min/max compare with < and >: values may be strings or Dates too, where Math.min/max would not do.
const smaller = (a: unknown, b: unknown) => ((b as number) < (a as number) ? b : a);
const larger = (a: unknown, b: unknown) => ((b as number) > (a as number) ? b : a);

const MIN: Aggregator<unknown, unknown, unknown> = {
  zero: () => undefined,
  add: (s, v) => (v == null ? s : s === undefined ? v : smaller(s, v)),
  merge: (a, b) => (a === undefined ? b : b === undefined ? a : smaller(a, b)),
  result: (s) => s ?? null,
};

const MAX: Aggregator<unknown, unknown, unknown> = {
  zero: () => undefined,
  add: (s, v) => (v == null ? s : s === undefined ? v : larger(s, v)),
  merge: (a, b) => (a === undefined ? b : b === undefined ? a : larger(a, b)),
  result: (s) => s ?? null,
};

/** first/last keep a box so that a null value can be first. */
const FIRST: Aggregator<{ v: unknown } | null, unknown, unknown> = {
  zero: () => null,
  add: (s, v) => s ?? { v },
  merge: (a, b) => a ?? b,
  result: (s) => (s === null ? null : s.v),
};

const LAST: Aggregator<{ v: unknown } | null, unknown, unknown> = {
  zero: () => null,
  add: (_s, v) => ({ v }),
  merge: (a, b) => b ?? a,
  result: (s) => (s === null ? null : s.v),
};

/**
 * Aggregate functions for `groupBy(...).agg({...})`.
 *
 * @example
 * stream.groupBy(window('ts', '1 hour'), 'storeId').agg({ total: agg.sum('amount'), n: agg.count() })
 */
export const agg = Object.freeze({
  /** Rows in the group; with a column, its non-null values. */
  count: (column?: string): AggregateSpec =>
    spec(
      column === undefined ? 'count(*)' : `count(${column})`,
      column,
      column === undefined ? COUNT : COUNT_NON_NULL,
    ),
  /** Sum of the column's non-null values (null when there are none). */
  sum: (column: string): AggregateSpec => spec(`sum(${column})`, column, SUM),
  /** Mean of the column's non-null values (null when there are none). */
  avg: (column: string): AggregateSpec => spec(`avg(${column})`, column, AVG),
  min: (column: string): AggregateSpec => spec(`min(${column})`, column, MIN),
  max: (column: string): AggregateSpec => spec(`max(${column})`, column, MAX),
  /** The value of the first row of the group, in arrival order. */
  first: (column: string): AggregateSpec => spec(`first(${column})`, column, FIRST),
  /** The value of the latest row of the group, in arrival order. */
  last: (column: string): AggregateSpec => spec(`last(${column})`, column, LAST),
  /** A user aggregator over a column (or over whole rows when `column` is omitted). */
  of: <S, V, R>(aggregator: Aggregator<S, V, R>, column?: string, name = 'udaf'): AggregateSpec => {
    for (const m of ['zero', 'add', 'merge', 'result'] as const) {
      if (typeof aggregator?.[m] !== 'function')
        throw invalidArgument(`agg.of: the aggregator needs a ${m} function`);
    }
    return spec(column === undefined ? `${name}(*)` : `${name}(${column})`, column, aggregator);
  },
});

export function isAggregateSpec(v: unknown): v is AggregateSpec {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'aggregate';
}
