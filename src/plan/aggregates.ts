import * as hdr from 'hdr-histogram-js';
import { ErrorCode, invalidArgument, MillraceError } from '../errors.js';

/**
 * A user-defined aggregation, Spark's Aggregator: `zero()` starts a group, `add` folds a value in,
 * `merge` combines two partial states (session windows merging), `result` makes the output value.
 * `add` and `merge` may update the state in place and return it.
 *
 * With a checkpoint, states are written to it: `serialize` turns a state into plain data (numbers,
 * strings, arrays, plain objects, `Uint8Array`s, Dates) detached from the live state, and
 * `deserialize` turns it back. Without them, the state is deep-copied with `structuredClone`, which
 * suits plain-data states (class instances come back as plain objects).
 */
export interface Aggregator<S = any, V = any, R = any> {
  zero(): S;
  add(state: S, value: V): S;
  merge(a: S, b: S): S;
  result(state: S): R;
  serialize?(state: S): unknown;
  deserialize?(data: unknown): S;
}

/** States that are never updated in place (numbers, or objects replaced rather than changed). */
const immutable = { serialize: <S>(s: S): unknown => s, deserialize: <S>(d: unknown): S => d as S };

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
  ...immutable,
  zero: () => 0,
  add: (n) => n + 1,
  merge: (a, b) => a + b,
  result: (n) => n,
};

const COUNT_NON_NULL: Aggregator<number, unknown, number> = {
  ...immutable,
  zero: () => 0,
  add: (n, v) => (v == null ? n : n + 1),
  merge: (a, b) => a + b,
  result: (n) => n,
};

const SUM: Aggregator<number | null, number, number | null> = {
  ...immutable,
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
  serialize: (s) => [s[0], s[1]],
  deserialize: (d) => d as [number, number],
};

// min/max compare with < and >: values may be strings or Dates too, where Math.min/max would not do.
const smaller = (a: unknown, b: unknown) => ((b as number) < (a as number) ? b : a);
const larger = (a: unknown, b: unknown) => ((b as number) > (a as number) ? b : a);

const MIN: Aggregator<unknown, unknown, unknown> = {
  ...immutable,
  zero: () => undefined,
  add: (s, v) => (v == null ? s : s === undefined ? v : smaller(s, v)),
  merge: (a, b) => (a === undefined ? b : b === undefined ? a : smaller(a, b)),
  result: (s) => s ?? null,
};

const MAX: Aggregator<unknown, unknown, unknown> = {
  ...immutable,
  zero: () => undefined,
  add: (s, v) => (v == null ? s : s === undefined ? v : larger(s, v)),
  merge: (a, b) => (a === undefined ? b : b === undefined ? a : larger(a, b)),
  result: (s) => s ?? null,
};

/** first/last keep a box so that a null value can be first. */
const FIRST: Aggregator<{ v: unknown } | null, unknown, unknown> = {
  ...immutable,
  zero: () => null,
  add: (s, v) => s ?? { v },
  merge: (a, b) => a ?? b,
  result: (s) => (s === null ? null : s.v),
};

const LAST: Aggregator<{ v: unknown } | null, unknown, unknown> = {
  ...immutable,
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
  /**
   * An estimate of the column's percentile(s) (`percentage` in [0, 1], or a list of them), from an
   * HDR histogram of the values to `accuracy` significant digits (default 3). Values must be
   * non-negative numbers; they are kept to three decimal places.
   */
  approxPercentile: (
    column: string,
    percentage: number | number[],
    accuracy: 1 | 2 | 3 | 4 | 5 = 3,
  ): AggregateSpec => {
    const ps = Array.isArray(percentage) ? percentage : [percentage];
    if (ps.length === 0 || ps.some((p) => typeof p !== 'number' || !(p >= 0 && p <= 1))) {
      throw invalidArgument(
        `agg.approxPercentile: percentages must be numbers in [0, 1], got ${JSON.stringify(percentage)}`,
      );
    }
    if (![1, 2, 3, 4, 5].includes(accuracy))
      throw invalidArgument('agg.approxPercentile: accuracy is 1 to 5 digits');
    return spec(
      `approx_percentile(${column}, ${JSON.stringify(percentage)})`,
      column,
      percentiles(ps, accuracy, Array.isArray(percentage)),
    );
  },
  /** A user aggregator over a column (or over whole rows when `column` is omitted). */
  of: <S, V, R>(aggregator: Aggregator<S, V, R>, column?: string, name = 'udaf'): AggregateSpec => {
    for (const m of ['zero', 'add', 'merge', 'result'] as const) {
      if (typeof aggregator?.[m] !== 'function')
        throw invalidArgument(`agg.of: the aggregator needs a ${m} function`);
    }
    const { serialize, deserialize } = aggregator;
    if ((serialize === undefined) !== (deserialize === undefined)) {
      throw invalidArgument('agg.of: give both serialize and deserialize, or neither');
    }
    for (const f of [serialize, deserialize]) {
      if (f !== undefined && typeof f !== 'function') {
        throw invalidArgument('agg.of: serialize and deserialize must be functions');
      }
    }
    return spec(column === undefined ? `${name}(*)` : `${name}(${column})`, column, aggregator);
  },
});

/** HdrHistogram's decoder of its V2 encoding (attached to JsHistogram by the library). */
const decodeHistogram = (data: Uint8Array): hdr.Histogram =>
  (hdr.JsHistogram as unknown as { decode(data: Uint8Array, bitBucketSize: 'packed'): hdr.Histogram }).decode(
    data,
    'packed',
  );

/** Values are recorded in thousandths: HDR histograms count integers. */
const PERCENTILE_SCALE = 1000;

function percentiles(
  ps: number[],
  digits: 1 | 2 | 3 | 4 | 5,
  many: boolean,
): Aggregator<hdr.Histogram | null, number, unknown> {
  return {
    zero: () => null,
    add: (h, v) => {
      if (v == null) return h;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        throw new MillraceError(
          ErrorCode.INVALID_ROW,
          `approxPercentile takes non-negative numbers, got ${JSON.stringify(v)}`,
        );
      }
      // Built on the first value: a group that never sees one costs nothing.
      const histogram = h ?? hdr.build({ bitBucketSize: 'packed', numberOfSignificantValueDigits: digits });
      histogram.recordValue(Math.round(v * PERCENTILE_SCALE));
      return histogram;
    },
    merge: (a, b) => {
      if (a === null) return b;
      if (b !== null) a.add(b);
      return a;
    },
    result: (h) => {
      const values = ps.map((p) => (h === null ? null : h.getValueAtPercentile(p * 100) / PERCENTILE_SCALE));
      return many ? values : values[0];
    },
    // HdrHistogram's V2 encoding, copied out of the histogram's buffer.
    serialize: (h) => (h === null ? null : (h as unknown as { encode(): Uint8Array }).encode().slice()),
    deserialize: (d) => (d == null ? null : decodeHistogram(d as Uint8Array)),
  };
}

export function isAggregateSpec(v: unknown): v is AggregateSpec {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'aggregate';
}
