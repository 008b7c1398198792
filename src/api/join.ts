import { ErrorCode, invalidArgument, MillraceError } from '../errors.js';
import type { JoinCombine, JoinType, StaticTable } from '../plan/join.js';
import type { LogicalNode } from '../plan/nodes.js';
import { type Duration, parseDuration } from '../util/duration.js';

export {
  type JoinCombine,
  type JoinType,
  mergeRows,
  type StaticFileFormat,
  type StaticTable,
  statics,
} from '../plan/join.js';

/** Options of a stream–static join. */
export interface StaticJoinOptions<L = any, R = any, U = any> {
  /** The key column(s), present under the same names in both inputs. */
  on: string | readonly string[];
  /** `inner` (default): rows with a match only; `leftOuter`: an unmatched stream row too. */
  type?: 'inner' | 'leftOuter';
  combine?: JoinCombine<L, R, U>;
  name?: string;
}

/**
 * The event-time condition of a stream–stream join: a pair matches when
 * `right[right] ∈ [left[left] + lower, left[left] + upper]` (bounds included). Bounds are
 * durations, and may be negative (`'-5 minutes'`, or a negative number of ms).
 */
export interface JoinTimeRange {
  left: string;
  right: string;
  lower: Duration;
  upper: Duration;
}

/** Options of a stream–stream join. */
export interface StreamJoinOptions<L = any, R = any, U = any> {
  on: string | readonly string[];
  /** `inner` (default), `leftOuter` or `rightOuter`. */
  type?: JoinType;
  /** Required: bounds how long each side's rows are kept. */
  between: JoinTimeRange;
  combine?: JoinCombine<L, R, U>;
  name?: string;
}

/** The checked parts both join kinds share. */
function common(op: string, options: { on?: unknown; combine?: unknown; name?: unknown }) {
  if (typeof options !== 'object' || options === null) throw invalidArgument(`${op}: pass { on, ... }`);
  const on = typeof options.on === 'string' ? [options.on] : options.on;
  if (!Array.isArray(on) || on.length === 0 || !on.every((k) => typeof k === 'string' && k !== '')) {
    throw invalidArgument(`${op}: 'on' must be a column name or a non-empty array of column names`);
  }
  if (options.combine !== undefined && typeof options.combine !== 'function')
    throw invalidArgument(`${op}: 'combine' must be a function (left, right) => row`);
  if (options.name !== undefined && typeof options.name !== 'string')
    throw invalidArgument(`${op}: 'name' must be a string`);
  return {
    keys: Object.freeze([...new Set(on as string[])]),
    combine: options.combine as JoinCombine | undefined,
    label: options.name as string | undefined,
  };
}

/** @internal The node of `input.join(table, options)`. */
export function staticJoinNode(
  input: LogicalNode,
  table: StaticTable,
  options: StaticJoinOptions,
): LogicalNode {
  const { keys, combine, label } = common('join', options);
  const type = options.type ?? 'inner';
  if (type !== 'inner' && type !== 'leftOuter') {
    throw invalidArgument(
      `join: a stream–static join is 'inner' or 'leftOuter', got ${JSON.stringify(type)} ` +
        '(the static side has no unmatched rows to emit: it never ends)',
    );
  }
  return Object.freeze({ kind: 'staticJoin', input, table, keys, type, combine, label });
}

/** @internal The node of `input.join(other, options)`. */
export function streamJoinNode(
  input: LogicalNode,
  other: LogicalNode,
  options: StreamJoinOptions,
): LogicalNode {
  const { keys, combine, label } = common('join', options);
  const type = options.type ?? 'inner';
  if (type !== 'inner' && type !== 'leftOuter' && type !== 'rightOuter') {
    throw invalidArgument(
      `join: type must be 'inner', 'leftOuter' or 'rightOuter', got ${JSON.stringify(type)}`,
    );
  }
  const b = options.between as Partial<JoinTimeRange> | undefined;
  if (b === undefined || b === null || typeof b.left !== 'string' || typeof b.right !== 'string') {
    throw new MillraceError(
      ErrorCode.STREAM_JOIN_UNBOUNDED_STATE,
      'join: a stream–stream join needs a time-range condition, so that each side’s rows can be ' +
        "forgotten: pass between: { left: 'leftTimeColumn', right: 'rightTimeColumn', lower, upper } " +
        '(a pair matches when right time ∈ [left time + lower, left time + upper])',
    );
  }
  const lowerMs = signedDuration(b.lower, 'join between.lower');
  const upperMs = signedDuration(b.upper, 'join between.upper');
  if (lowerMs > upperMs) {
    throw invalidArgument(`join: between.lower (${lowerMs} ms) is after between.upper (${upperMs} ms)`);
  }
  const range = Object.freeze({ leftColumn: b.left, rightColumn: b.right, lowerMs, upperMs });
  return Object.freeze({ kind: 'streamJoin', input, other, keys, type, range, combine, label });
}

/** A duration that may be negative: a number of ms, or a duration string with a leading `-`. */
function signedDuration(value: Duration | undefined, what: string): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim().startsWith('-'))
    return -parseDuration(value.trim().slice(1), what);
  if (value === undefined) throw invalidArgument(`${what}: give a duration`);
  return parseDuration(value, what);
}
