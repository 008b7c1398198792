import type { DataType, Field, RecordBatch, Vector } from 'apache-arrow';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { ArrowType } from '../../plan/arrow-udf.js';
import type { AnsweredColumns } from '../contract.js';
import { arrow } from './arrow-module.js';
import type { ArrowEncoder, ColumnsBatch, Encoded } from './ipc.js';
import { vectorValues } from './vector-values.js';

export { vectorValues };

/** An Arrow type from a plan's type name or DataType. */
export function resolveType(type: ArrowType): DataType {
  if (typeof type !== 'string') return type as DataType;
  const A = arrow();
  switch (type) {
    case 'float64':
      return new A.Float64();
    case 'float32':
      return new A.Float32();
    case 'int8':
      return new A.Int8();
    case 'int16':
      return new A.Int16();
    case 'int32':
      return new A.Int32();
    case 'int64':
      return new A.Int64();
    case 'uint8':
      return new A.Uint8();
    case 'uint16':
      return new A.Uint16();
    case 'uint32':
      return new A.Uint32();
    case 'uint64':
      return new A.Uint64();
    case 'utf8':
      return new A.Utf8();
    case 'bool':
      return new A.Bool();
  }
}

/** The type a column gets from its first non-null value (Float64 when every value is null). */
function inferType(value: unknown): DataType {
  const A = arrow();
  if (typeof value === 'bigint') return new A.Int64();
  if (typeof value === 'string') return new A.Utf8();
  if (typeof value === 'boolean') return new A.Bool();
  return new A.Float64();
}

/** Why `value` cannot be a value of `type`, or null when it can (null and undefined always can). */
function misfit(value: unknown, type: DataType): string | null {
  if (value === null || value === undefined) return null;
  const A = arrow();
  if (A.DataType.isFloat(type)) return typeof value === 'number' ? null : 'not a number';
  if (A.DataType.isInt(type)) {
    if (type.bitWidth === 64) {
      if (typeof value !== 'bigint' && !(typeof value === 'number' && Number.isSafeInteger(value)))
        return 'not a bigint or safe integer';
      const v = BigInt(value);
      const min = type.isSigned ? -(2n ** 63n) : 0n;
      const max = type.isSigned ? 2n ** 63n - 1n : 2n ** 64n - 1n;
      return v >= min && v <= max ? null : `out of range for ${type}`;
    }
    if (typeof value !== 'number' || !Number.isInteger(value)) return 'not an integer';
    const bits = type.bitWidth;
    const min = type.isSigned ? -(2 ** (bits - 1)) : 0;
    const max = type.isSigned ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
    return value >= min && value <= max ? null : `out of range for ${type}`;
  }
  if (A.DataType.isUtf8(type) || A.DataType.isLargeUtf8(type))
    return typeof value === 'string' ? null : 'not a string';
  if (A.DataType.isBool(type)) return typeof value === 'boolean' ? null : 'not a boolean';
  return null;
}

/**
 * A column's reader: fills a Float64Array straight from the rows while every value is a number
 * (the common case, and the fast one); returns the index of the first row that is not, or −1.
 * Generated per column name so the property read is monomorphic at its own site.
 */
type FloatReader = (rows: readonly unknown[], n: number, out: Float64Array) => number;
type ValueReader = (rows: readonly unknown[], n: number) => unknown[];

function floatReader(name: string): FloatReader {
  const key = JSON.stringify(name);
  return new Function(
    'rows',
    'n',
    'out',
    `for (let i = 0; i < n; i++) { const r = rows[i]; const v = r == null ? undefined : r[${key}]; if (typeof v !== 'number') return i; out[i] = v; } return -1;`,
  ) as FloatReader;
}

/**
 * All columns at once, row by row (one pass over the rows, where a reader per column makes one
 * pass per column): column `c`'s value of row `i` goes to `f64[starts[c] + i]` — in a message the
 * encoder laid out, or in one array of the batch's columns one after the other — while every
 * value is a number; returns the index of the first row with one that is not, or −1.
 */
type PlaceReader = (
  rows: readonly unknown[],
  n: number,
  f64: Float64Array,
  starts: readonly number[],
) => number;

function placeReader(names: readonly string[]): PlaceReader {
  const starts = names.map((_, c) => `const s${c} = starts[${c}];`).join(' ');
  const reads = names.map((name, c) => `const v${c} = r[${JSON.stringify(name)}];`).join(' ');
  const checks = names.map((_, c) => `typeof v${c} !== 'number'`).join(' || ');
  const writes = names.map((_, c) => `f64[s${c} + i] = v${c};`).join(' ');
  return new Function(
    'rows',
    'n',
    'f64',
    'starts',
    `${starts} for (let i = 0; i < n; i++) { const r = rows[i]; if (r == null) return i; ${reads} if (${checks}) return i; ${writes} } return -1;`,
  ) as PlaceReader;
}

function valueReader(name: string): ValueReader {
  const key = JSON.stringify(name);
  return new Function(
    'rows',
    'n',
    `const out = new Array(n); for (let i = 0; i < n; i++) { const r = rows[i]; out[i] = r == null ? undefined : r[${key}]; } return out;`,
  ) as ValueReader;
}

/**
 * A record batch of float64 columns over one array of values, which is written again for the next
 * batch of as many rows: Arrow's RecordBatch and Table cost microseconds to make (each copies its
 * schema), more than a model's arithmetic on a few rows. A function given a lent batch has it for
 * the call only.
 */
interface LentBatch {
  readonly values: Float64Array;
  readonly starts: readonly number[];
  readonly batch: RecordBatch;
}

/** Row counts whose lent batch is kept. */
const LENT_SIZES = 4;

/** A row of a batch whose value does not fit its column. */
export interface RowMisfit {
  readonly index: number;
  readonly error: MillraceError;
}

/**
 * Turns rows into Arrow record batches of named columns. A column's type is declared, or inferred
 * from the first batch that has a non-null value in it; then fixed. A value that does not fit its
 * column makes its row a bad record (`INVALID_ROW`, naming the operator and the column), left out.
 */
export class RowColumns {
  private readonly types: (DataType | null)[];
  private readonly floats: FloatReader[];
  private readonly placeReader: PlaceReader;
  private readonly values: ValueReader[];
  private fields: Field[] | null = null;
  /** The schema and struct type of the last batch, kept while its column types stay. */
  private allFloat64 = false;
  private schema: { schema: import('apache-arrow').Schema; struct: DataType } | null = null;
  /** Batches lent before, by row count (see {@link toBatch}). */
  private readonly lent = new Map<number, LentBatch>();

  constructor(
    private readonly owner: string,
    readonly names: readonly string[],
    declared: Readonly<Record<string, ArrowType>>,
  ) {
    this.types = names.map((n) => (declared[n] === undefined ? null : resolveType(declared[n]!)));
    this.floats = names.map(floatReader);
    this.placeReader = placeReader(names);
    this.values = names.map(valueReader);
  }

  /**
   * The message of the first `n` rows, written by `encoder` and filled in place, when every
   * column is float64, every value a number and the encoder knows the layout for `n` rows; null
   * otherwise (then {@link toBatch} and the encoder's `encode` make it).
   */
  encodeInPlace(rows: readonly unknown[], n: number, encoder: ArrowEncoder): Encoded | null {
    if (this.schema === null || !this.allFloat64) return null;
    const message = encoder.fixedMessage(this.schema.schema, n);
    if (message === null || this.placeReader(rows, n, message.f64, message.starts) >= 0) return null;
    return { chunks: [message.bytes], bytes: message.bytes.byteLength };
  }

  /**
   * Rows that do not fit are reported in `misfits` (by index) and left out of the batch. `lend`:
   * the batch may be one made before and written again (see {@link LentBatch}); the caller is
   * done with it before it asks for the next.
   */
  toBatch(
    rows: readonly unknown[],
    n: number,
    misfits: RowMisfit[],
    lend = false,
  ): { batch: RecordBatch; kept: number[] | null } {
    if (this.schema !== null && this.allFloat64) {
      // The usual case once the types are known: numbers only, read in one pass over the rows.
      const lent = lend ? this.lentBatch(n) : null;
      const made = lent ?? this.floatBatch(n);
      if (this.placeReader(rows, n, made.values, made.starts) < 0) return { batch: made.batch, kept: null };
    }
    return this.builtBatch(rows, n, misfits);
  }

  /** A batch of `n` rows of float64 columns, its values one array, column after column. */
  private floatBatch(n: number): LentBatch {
    const A = arrow();
    const values = new Float64Array(n * this.names.length);
    const starts = this.names.map((_, c) => c * n);
    const { schema, struct } = this.schema!;
    const children = schema.fields.map(
      (f, c) => new A.Data(f.type, 0, n, 0, [undefined, values.subarray(c * n, (c + 1) * n), undefined]),
    );
    const data = new A.Data(struct, 0, n, 0, [undefined, undefined, undefined], children);
    return { values, starts, batch: new A.RecordBatch(schema, data as any) };
  }

  /**
   * The batch of `n` rows lent before, or a new one kept for the next time (for a few sizes only:
   * one row, when the query keeps up, and the full batch, under load, are the usual ones).
   */
  private lentBatch(n: number): LentBatch | null {
    let lent = this.lent.get(n);
    if (lent === undefined && this.lent.size < LENT_SIZES) {
      lent = this.floatBatch(n);
      this.lent.set(n, lent);
    }
    return lent ?? null;
  }

  private builtBatch(
    rows: readonly unknown[],
    n: number,
    misfits: RowMisfit[],
  ): { batch: RecordBatch; kept: number[] | null } {
    const A = arrow();
    const columns: unknown[][] = [];
    const floats: (Float64Array | null)[] = [];
    let bad: Set<number> | null = null;
    for (let c = 0; c < this.names.length; c++) {
      let type = this.types[c];
      if (type === null || A.DataType.isFloat(type)) {
        const out = new Float64Array(n);
        if (
          (type === null || (type as { precision: number }).precision === 2) &&
          this.floats[c]!(rows, n, out) < 0
        ) {
          this.types[c] = type ??= new A.Float64();
          floats.push(out);
          columns.push([]);
          continue;
        }
      }
      const values = this.values[c]!(rows, n);
      if (type === null) {
        const first = values.find((v) => v !== null && v !== undefined);
        if (first === undefined) {
          floats.push(null);
          columns.push(values);
          continue;
        }
        this.types[c] = type = inferType(first);
      }
      for (let i = 0; i < n; i++) {
        const why = misfit(values[i], type);
        if (why === null) continue;
        bad ??= new Set();
        if (bad.has(i)) continue;
        bad.add(i);
        misfits.push({
          index: i,
          error: new MillraceError(
            ErrorCode.INVALID_ROW,
            `${this.owner}: the value of column '${this.names[c]}' does not fit ${type}: ${why} (${describe(values[i])})`,
          ),
        });
      }
      floats.push(null);
      columns.push(values);
    }
    const kept = bad === null ? null : [...Array(n).keys()].filter((i) => !bad!.has(i));
    const length = kept === null ? n : kept.length;
    const children = this.names.map((_, c) => {
      const type = this.types[c] ?? new A.Float64();
      const f = floats[c];
      // A column of numbers only: its values are the Arrow buffer as they are (no builder).
      if (f != null && kept === null) return new A.Data(type, 0, length, 0, [undefined, f, undefined]);
      const all: unknown[] = f != null ? Array.from(f) : columns[c]!;
      const picked = kept === null ? all : kept.map((i) => all[i]);
      return A.vectorFromArray(picked.map(toArrowValue(type)), type as any).data[0]!;
    });
    if (this.fields === null || children.some((d, c) => d.type !== this.fields![c]!.type)) {
      this.fields = this.names.map((name, c) => new A.Field(name, children[c]!.type, true));
      this.schema = { schema: new A.Schema(this.fields), struct: new A.Struct(this.fields) };
      this.allFloat64 = children.every((d) => A.DataType.isFloat(d.type) && d.type.precision === 2);
      this.lent.clear();
    }
    const { schema, struct } = this.schema!;
    const data = new A.Data(struct, 0, length, 0, [undefined, undefined, undefined], children);
    return { batch: new A.RecordBatch(schema, data as any), kept };
  }
}

/** Converts JS values to what Arrow's builder of `type` takes (a safe integer for Int64: a bigint). */
function toArrowValue(type: DataType): (v: unknown) => unknown {
  const A = arrow();
  if (A.DataType.isInt(type) && type.bitWidth === 64)
    return (v) => (typeof v === 'number' ? BigInt(v) : (v ?? null));
  return (v) => v ?? null;
}

function describe(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * What an Arrow UDF returned, as a vector of its declared type and of `length` values: an Arrow
 * Vector, a typed array or an array. Anything else, or another length, is an `INVALID_ROW` error
 * naming the UDF.
 */
export function resultVector(result: unknown, type: DataType, length: number, owner: string): Vector {
  const A = arrow();
  let v: Vector;
  if (result instanceof A.Vector) {
    v = result;
  } else if (
    (A.DataType.isFloat(type) || (A.DataType.isInt(type) && type.bitWidth < 64)) &&
    ArrayBuffer.isView(result) &&
    result.constructor === (type as { ArrayType?: unknown }).ArrayType
  ) {
    // A typed array of a fixed-width numeric type's own kind (a Float64Array for float64): its
    // values are the column as they are.
    v = A.makeVector(
      new A.Data(type, 0, (result as Float64Array).length, 0, [undefined, result as Float64Array, undefined]),
    );
  } else if (Array.isArray(result) || (ArrayBuffer.isView(result) && !(result instanceof DataView))) {
    const values = Array.from(result as ArrayLike<unknown>);
    for (let i = 0; i < values.length; i++) {
      const why = misfit(values[i], type);
      if (why !== null)
        throw new MillraceError(
          ErrorCode.INVALID_ROW,
          `${owner} returned a value that does not fit ${type} at row ${i}: ${why} (${describe(values[i])})`,
        );
    }
    v = A.vectorFromArray(values.map(toArrowValue(type)), type as any);
  } else {
    throw new MillraceError(
      ErrorCode.INVALID_ROW,
      `${owner} must return an Arrow Vector, a typed array or an array, got ${result === null ? 'null' : typeof result}`,
    );
  }
  if (v.length !== length)
    throw new MillraceError(
      ErrorCode.INVALID_ROW,
      `${owner} returned ${v.length} values for a batch of ${length} rows (one value per row)`,
    );
  if (String(v.type) !== String(type))
    throw new MillraceError(
      ErrorCode.INVALID_ROW,
      `${owner} returned a vector of ${v.type}; it declares ${type}`,
    );
  return v;
}

/**
 * Batches a function returned on the task's thread as columns the operator owns: values are
 * copied out of the batches' buffers, which the function may keep and write again (a model that
 * reuses its output array) before the answer's rows have gone on.
 */
export function answerColumns(batches: readonly (RecordBatch | ColumnsBatch)[]): AnsweredColumns[] {
  return batches.map((b) => columnsOf(b, owned));
}

/** The rows of record batches as plain objects (field name → JS value). */
export function batchRows(batches: readonly RecordBatch[]): Record<string, unknown>[] {
  return answeredRows(batches.map((b) => columnsOf(b, (v) => v)));
}

function columnsOf(
  b: RecordBatch | ColumnsBatch,
  take: (values: ArrayLike<unknown>) => ArrayLike<unknown>,
): AnsweredColumns {
  if ('children' in b) {
    const A = arrow();
    return {
      length: b.length,
      names: b.schema.schema.fields.map((f) => f.name),
      columns: b.children.map((d) => take(vectorValues(A.makeVector(d)))),
    };
  }
  const fields = b.schema.fields;
  return {
    length: b.numRows,
    names: fields.map((f) => f.name),
    columns: fields.map((_, c) => take(vectorValues(b.getChildAt(c)!))),
  };
}

/** A vector's values as JS values that share no buffer with it. */
export function ownedValues(v: Vector): ArrayLike<unknown> {
  return owned(vectorValues(v));
}

/** Values that share no buffer with a vector (a typed array view is copied). */
function owned(values: ArrayLike<unknown>): ArrayLike<unknown> {
  return ArrayBuffer.isView(values) ? (values as Float64Array).slice() : values;
}

/** The rows of answered columns as plain objects (field name → JS value). */
export function answeredRows(answered: readonly AnsweredColumns[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const { length, names, columns } of answered) {
    for (let i = 0; i < length; i++) {
      const row: Record<string, unknown> = {};
      for (let c = 0; c < names.length; c++) row[names[c]!] = columns[c]![i];
      out.push(row);
    }
  }
  return out;
}
