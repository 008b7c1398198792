/**
 * Errors the engine raises on purpose. Every one is a {@link MillraceError} with a stable `code`,
 * and survives the trip from a worker thread to the driver (code, message, stack, operator,
 * partition) through {@link serializeError} / {@link deserializeError}.
 */

/** Stable error codes. Tests and users match on these, never on messages. */
export const ErrorCode = {
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  INVALID_DURATION: 'INVALID_DURATION',
  INVALID_JOB: 'INVALID_JOB',
  MISSING_PARAM: 'MISSING_PARAM',
  INVALID_SOURCE_NAME: 'INVALID_SOURCE_NAME',
  DUPLICATE_SOURCE_NAME: 'DUPLICATE_SOURCE_NAME',
  DUPLICATE_SINK_NAME: 'DUPLICATE_SINK_NAME',
  OUTPUT_MODE_NOT_SUPPORTED: 'OUTPUT_MODE_NOT_SUPPORTED',
  SINK_MODE_NOT_SUPPORTED: 'SINK_MODE_NOT_SUPPORTED',
  REAL_TIME_MODE_UNSUPPORTED_OPERATOR: 'REAL_TIME_MODE_UNSUPPORTED_OPERATOR',
  UNNAMED_STREAMING_SOURCES_WITH_ENFORCEMENT: 'UNNAMED_STREAMING_SOURCES_WITH_ENFORCEMENT',
  PLAN_MISMATCH: 'PLAN_MISMATCH',
  UNSUPPORTED_OPERATION: 'UNSUPPORTED_OPERATION',
  STREAM_JOIN_UNBOUNDED_STATE: 'STREAM_JOIN_UNBOUNDED_STATE',
  UNKNOWN_SOURCE: 'UNKNOWN_SOURCE',
  UNKNOWN_SINK: 'UNKNOWN_SINK',
  QUERY_NOT_ACTIVE: 'QUERY_NOT_ACTIVE',
  QUERY_STOP_TIMEOUT: 'QUERY_STOP_TIMEOUT',
  TASK_FAILED: 'TASK_FAILED',
  RECORD_TOO_LARGE: 'RECORD_TOO_LARGE',
  RECORD_NOT_ENCODABLE: 'RECORD_NOT_ENCODABLE',
  INVALID_ROW: 'INVALID_ROW',
  STATE_NOT_ENCODABLE: 'STATE_NOT_ENCODABLE',
  EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED: 'EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED',
  STATE_TOO_LARGE: 'STATE_TOO_LARGE',
  STATE_MEMORY_EXCEEDED: 'STATE_MEMORY_EXCEEDED',
  CLOCK_NOT_MANUAL: 'CLOCK_NOT_MANUAL',
  CHECKPOINT_INCOMPATIBLE_CHANGE: 'CHECKPOINT_INCOMPATIBLE_CHANGE',
  CHECKPOINT_CORRUPT: 'CHECKPOINT_CORRUPT',
  CHECKPOINT_IN_USE: 'CHECKPOINT_IN_USE',
  CHECKPOINT_WRITE_FAILED: 'CHECKPOINT_WRITE_FAILED',
  SINK_COMMIT_FAILED: 'SINK_COMMIT_FAILED',
  SIDE_OUTPUT_WRITE_FAILED: 'SIDE_OUTPUT_WRITE_FAILED',
  SOURCE_READ_FAILED: 'SOURCE_READ_FAILED',
  SOURCE_DATA_LOST: 'SOURCE_DATA_LOST',
  USAGE: 'USAGE',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

/** Whether `code` is one of the engine's codes (an error from elsewhere may carry another: `ENOENT`). */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && CODES.has(code);
}

/** Where in the running query an error happened. */
export interface ErrorLocation {
  /** Operator id (its position in the plan) and kind, e.g. `{ id: 3, kind: 'map' }`. */
  operator?: { id: number; kind: string; name?: string };
  stage?: number;
  partition?: number;
  /** Source partition and offset of the row being processed, when known. */
  sourceOffset?: { source: number; partition: number; offset: number };
}

const brand = Symbol.for('millrace.error');

/**
 * The one error class the engine throws on purpose. `instanceof` works across copies of the
 * library because the check is a registered symbol, not the class identity.
 *
 * @example
 * try { await startQuery(url) } catch (e) {
 *   if (e instanceof MillraceError && e.code === 'OUTPUT_MODE_NOT_SUPPORTED') ...
 * }
 */
export class MillraceError extends Error implements ErrorLocation {
  readonly code: ErrorCode;
  declare operator?: ErrorLocation['operator'];
  declare stage?: number;
  declare partition?: number;
  declare sourceOffset?: ErrorLocation['sourceOffset'];

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown } & ErrorLocation) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MillraceError';
    this.code = code;
    if (options?.operator) this.operator = options.operator;
    if (options?.stage !== undefined) this.stage = options.stage;
    if (options?.partition !== undefined) this.partition = options.partition;
    if (options?.sourceOffset) this.sourceOffset = options.sourceOffset;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
  }
}
Object.defineProperty(MillraceError.prototype, brand, { value: true });

/** Plain-data form of an error, safe to post between threads or write as JSON. */
export interface SerializedError extends ErrorLocation {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  /** true when the error came from user code (a map function, a UDF, a sink callback). */
  userCode?: boolean;
}

export function serializeError(
  error: unknown,
  location?: ErrorLocation & { userCode?: boolean },
): SerializedError {
  const e =
    error instanceof Error
      ? error
      : new Error(typeof error === 'string' ? error : `non-Error value thrown: ${safeString(error)}`);
  const out: SerializedError = { name: e.name, message: e.message };
  if (e.stack !== undefined) out.stack = e.stack;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') out.code = code;
  const own = e as Partial<ErrorLocation>;
  const operator = location?.operator ?? own.operator;
  if (operator) out.operator = operator;
  const stage = location?.stage ?? own.stage;
  if (stage !== undefined) out.stage = stage;
  const partition = location?.partition ?? own.partition;
  if (partition !== undefined) out.partition = partition;
  const sourceOffset = location?.sourceOffset ?? own.sourceOffset;
  if (sourceOffset) out.sourceOffset = sourceOffset;
  if (location?.userCode) out.userCode = true;
  return out;
}

/**
 * Rebuilds the error a task reported. An engine error keeps its code; an error from user code, or
 * one without an engine code (a plain `Error`, a system error such as `ENOENT`), becomes
 * `TASK_FAILED` with the original message first, where it happened after it, the original stack
 * kept, and the original error (name, message, stack, code) as `cause`.
 */
export function deserializeError(s: SerializedError): MillraceError {
  const where = describeLocation(s);
  if (isErrorCode(s.code) && !s.userCode) {
    const e = new MillraceError(s.code, where ? `${s.message} (${where})` : s.message, s);
    if (s.stack) e.stack = `MillraceError [${s.code}]: ${e.message}\n${stackFrames(s.stack)}`;
    return e;
  }
  const cause = Object.assign(new Error(s.message), { name: s.name }) as Error & { code?: string };
  if (s.stack) cause.stack = s.stack;
  if (s.code) cause.code = s.code;
  const e = new MillraceError(ErrorCode.TASK_FAILED, where ? `${s.message} (${where})` : s.message, {
    ...s,
    cause,
  });
  e.stack = `MillraceError [TASK_FAILED]: ${e.message}\n${s.stack ? stackFrames(s.stack) : ''}`;
  return e;
}

export function describeLocation(l: ErrorLocation): string {
  const parts: string[] = [];
  if (l.operator) {
    parts.push(
      `operator ${l.operator.kind}#${l.operator.id}${l.operator.name ? ` '${l.operator.name}'` : ''}`,
    );
  }
  if (l.stage !== undefined) parts.push(`stage ${l.stage}`);
  if (l.partition !== undefined) parts.push(`partition ${l.partition}`);
  if (l.sourceOffset) {
    parts.push(
      `row at source ${l.sourceOffset.source} partition ${l.sourceOffset.partition} offset ${l.sourceOffset.offset}`,
    );
  }
  return parts.join(', ');
}

function stackFrames(stack: string): string {
  const lines = stack.split('\n');
  const first = lines.findIndex((l) => /^\s+at /.test(l));
  return first < 0 ? '' : lines.slice(first).join('\n');
}

function safeString(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Shorthand used across the code base for argument checks at plan time. */
export function invalidArgument(message: string): MillraceError {
  return new MillraceError(ErrorCode.INVALID_ARGUMENT, message);
}
