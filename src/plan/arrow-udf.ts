import { invalidArgument } from '../errors.js';

/**
 * Arrow type names an Arrow UDF may return (or declare for an input column). An Arrow `DataType`
 * object is accepted too; names keep the plan free of the Arrow package, which loads only in
 * threads that run Arrow code.
 */
export const ARROW_TYPE_NAMES = [
  'float64',
  'float32',
  'int8',
  'int16',
  'int32',
  'int64',
  'uint8',
  'uint16',
  'uint32',
  'uint64',
  'utf8',
  'bool',
] as const;

export type ArrowTypeName = (typeof ARROW_TYPE_NAMES)[number];

/** An Arrow type: a name from {@link ARROW_TYPE_NAMES} or an Arrow `DataType` (e.g. `new Float64()`). */
export type ArrowType = ArrowTypeName | { readonly typeId: number };

/** Per-operator batching: how many rows one call of the function gets at most. */
export interface ArrowBatchOptions {
  /**
   * Rows per Arrow batch at most; the query's `arrowMaxRecordsPerBatch` when unset (1 in
   * real-time mode, 10 000 in micro-batch mode). In real-time mode a batch also closes when no
   * more input waits; in micro-batch mode the last batch of a trigger closes at its end.
   */
  maxRecordsPerBatch?: number;
  /**
   * Runs the function on the query's UDF threads, apart from the tasks (as the query option
   * `isolateUdfs` does for every Arrow operator): for code that blocks or takes long per batch (a
   * native model runtime, a slow library), which would otherwise hold up the task's other rows.
   * Default: on the task's own thread, with no hop between threads.
   */
  isolate?: boolean;
}

export interface ArrowUdfOptions extends ArrowBatchOptions {
  /** The input columns, in order: the names of the columns the function's table holds. */
  input: readonly string[];
  /**
   * Declared types of input columns (by name); undeclared ones are inferred from the first batch
   * (a number is `float64`, a bigint `int64`, a string `utf8`, a boolean `bool`).
   */
  inputTypes?: Readonly<Record<string, ArrowType>>;
  /** The type of the returned column. */
  returns: ArrowType;
  /** A name for plans and errors. Default: the function's name, else `arrowUdf`. */
  name?: string;
}

/**
 * A vectorised UDF: called once per batch of rows with an Arrow `Table` of its input columns;
 * returns one value per row (an Arrow `Vector`, a typed array or an array).
 */
export interface ArrowUdfCall {
  readonly kind: 'arrowUdf';
  readonly name: string;
  readonly fn: (table: any) => unknown;
  readonly input: readonly string[];
  readonly inputTypes: Readonly<Record<string, ArrowType>>;
  readonly returns: ArrowType;
  readonly maxRecordsPerBatch: number | undefined;
  /** Set (true) when it runs on the UDF threads ({@link ArrowBatchOptions.isolate}). */
  readonly isolate?: true;
}

/**
 * Defines a column computed by a vectorised function over Arrow batches, for `withColumn` and
 * `select`. It runs on the task's thread, or with `isolate` on the query's UDF threads.
 *
 * @example
 * const score = arrowUdf((t) => t.getChild('amount').toArray().map((a) => a / 100), {
 *   input: ['amount'],
 *   returns: 'float64',
 * });
 * payments.withColumn('score', score);
 */
export function arrowUdf(fn: (table: any) => unknown, options: ArrowUdfOptions): ArrowUdfCall {
  if (typeof fn !== 'function') throw invalidArgument('arrowUdf(fn, options): fn must be a function');
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('arrowUdf(fn, options): options { input, returns } are required');
  const name = options.name ?? (fn.name || 'arrowUdf');
  if (typeof name !== 'string' || name === '')
    throw invalidArgument('arrowUdf: name must be a non-empty string');
  const { input } = options;
  if (!Array.isArray(input) || input.length === 0 || !input.every((c) => typeof c === 'string' && c !== ''))
    throw invalidArgument(`arrowUdf '${name}': input must be a non-empty array of column names`);
  if (new Set(input).size !== input.length)
    throw invalidArgument(`arrowUdf '${name}': input names a column twice`);
  checkArrowType(options.returns, `arrowUdf '${name}': returns`);
  const inputTypes = options.inputTypes ?? {};
  for (const [column, type] of Object.entries(inputTypes)) {
    if (!input.includes(column))
      throw invalidArgument(`arrowUdf '${name}': inputTypes names '${column}', which is not an input column`);
    checkArrowType(type, `arrowUdf '${name}': inputTypes.${column}`);
  }
  return Object.freeze({
    kind: 'arrowUdf',
    name,
    fn,
    input: Object.freeze([...input]),
    inputTypes: Object.freeze({ ...inputTypes }),
    returns: options.returns,
    maxRecordsPerBatch: checkBatchSize(options.maxRecordsPerBatch, `arrowUdf '${name}'`),
    ...checkIsolate(options.isolate, `arrowUdf '${name}'`),
  });
}

export function checkArrowType(type: unknown, where: string): asserts type is ArrowType {
  if (typeof type === 'string' && (ARROW_TYPE_NAMES as readonly string[]).includes(type)) return;
  if (typeof type === 'object' && type !== null && typeof (type as { typeId?: unknown }).typeId === 'number')
    return;
  throw invalidArgument(
    `${where} must be an Arrow DataType or one of ${ARROW_TYPE_NAMES.join(', ')}, got ${JSON.stringify(type)}`,
  );
}

/** Validates an `isolate` option: the field to spread into the node (none unless true). */
export function checkIsolate(value: unknown, where: string): { isolate?: true } {
  if (value === undefined || value === false) return {};
  if (value === true) return { isolate: true };
  throw invalidArgument(`${where}: isolate must be true or false, got ${JSON.stringify(value)}`);
}

/** Validates a `maxRecordsPerBatch` (undefined: the query's setting). */
export function checkBatchSize(value: unknown, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000)
    throw invalidArgument(
      `${where}: maxRecordsPerBatch must be an integer from 1 to 1000000, got ${JSON.stringify(value)}`,
    );
  return value;
}

/** How a type reads in plans and errors. */
export function describeArrowType(type: ArrowType): string {
  // An Arrow DataType prints as its name capitalised (Float64): the same type named either way
  // reads the same.
  return typeof type === 'string' ? type : String(type).toLowerCase();
}

/** Rows per batch in force: the operator's own, else the query's, else the mode's default. */
export function batchSizeOf(own: number | undefined, query: number | undefined, microBatch: boolean): number {
  return own ?? query ?? (microBatch ? 10_000 : 1);
}
