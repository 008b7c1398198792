import { invalidArgument } from '../errors.js';
import { type Duration, parseDuration } from '../util/duration.js';
import { isWindowTime, type WindowTimeExpr } from './expressions.js';

/**
 * The column a window reads its event time from: a column name, or `windowTime(column)` for the
 * window of an earlier aggregation (a window value stands for its `end − 1` either way).
 */
function timeColumn(column: string | WindowTimeExpr, call: string): string {
  if (isWindowTime(column)) return column.column;
  if (typeof column !== 'string' || column === '')
    throw invalidArgument(`${call}: name the event-time column, or windowTime(column) of a window column`);
  return column;
}

/**
 * A time window over an event-time column: tumbling (`slide` = `size`) or sliding. Windows are
 * `[start, end)` in ms since the epoch, aligned to the epoch plus `startOffset` (as Spark's
 * `window(col, size, slide, startTime)`).
 */
export interface TimeWindow {
  readonly kind: 'window';
  readonly column: string;
  readonly sizeMs: number;
  readonly slideMs: number;
  readonly startOffsetMs: number;
}

/** A window as it appears in an aggregation's output row. */
export interface WindowBounds {
  start: number;
  end: number;
}

/**
 * A tumbling window (`window('ts', '1 hour')`) or a sliding one (`window('ts', '1 hour', '15
 * minutes')`): every row belongs to `size / slide` windows.
 *
 * @example stream.groupBy(window('ts', '1 hour'), 'storeId').agg({ total: agg.sum('amount') })
 */
export function window(
  timeOf: string | WindowTimeExpr,
  size: Duration,
  slide?: Duration,
  startOffset: Duration = 0,
): TimeWindow {
  const column = timeColumn(timeOf, 'window(column, size)');
  const sizeMs = parseDuration(size, 'window size');
  const slideMs = slide === undefined ? sizeMs : parseDuration(slide, 'window slide');
  const startOffsetMs = parseDuration(startOffset, 'window start offset');
  if (sizeMs <= 0) throw invalidArgument('window: the size must be positive');
  if (slideMs <= 0 || slideMs > sizeMs) {
    throw invalidArgument(
      `window: the slide must be positive and at most the size (${sizeMs} ms), got ${slideMs} ms`,
    );
  }
  if (startOffsetMs >= slideMs)
    throw invalidArgument('window: the start offset must be smaller than the slide');
  return Object.freeze({ kind: 'window', column, sizeMs, slideMs, startOffsetMs });
}

/**
 * A session window: per group, rows less than `gap` apart form one session
 * `[first event, last event + gap)`; a row that bridges two sessions merges them.
 */
export interface SessionWindow {
  readonly kind: 'session';
  readonly column: string;
  readonly gapMs: number;
}

/**
 * A session window over an event-time column (Spark's `session_window`): sessions of the same
 * group whose ranges overlap or touch merge. Sessions support append mode (with a watermark: a
 * session is emitted once the watermark passes its end) and complete mode; a session window
 * needs at least one other grouping column.
 *
 * @example stream.withWatermark('ts', '10 minutes').groupBy(sessionWindow('ts', '5 minutes'), 'userId').count()
 */
export function sessionWindow(timeOf: string | WindowTimeExpr, gap: Duration): SessionWindow {
  const column = timeColumn(timeOf, 'sessionWindow(column, gap)');
  const gapMs = parseDuration(gap, 'session gap');
  if (gapMs <= 0) throw invalidArgument('sessionWindow: the gap must be positive');
  return Object.freeze({ kind: 'session', column, gapMs });
}

/** Any window a groupBy takes. */
export type AnyWindow = TimeWindow | SessionWindow;

export function isWindow(v: unknown): v is AnyWindow {
  const k = typeof v === 'object' && v !== null ? (v as { kind?: unknown }).kind : undefined;
  return k === 'window' || k === 'session';
}

/**
 * Writes the starts of every window of `w` that contains event time `t` to `out[0..n)`, latest
 * first, and returns `n`. `out` is a scratch array the caller keeps: it is overwritten, never
 * emptied (`out.length = 0` would drop its storage, and the next write allocate it again — a
 * per-row allocation).
 */
export function windowStarts(w: TimeWindow, t: number, out: number[]): number {
  const last = t - ((((t - w.startOffsetMs) % w.slideMs) + w.slideMs) % w.slideMs);
  let n = 0;
  for (let start = last; start > t - w.sizeMs; start -= w.slideMs) out[n++] = start;
  return n;
}

export function isTimeWindow(v: unknown): v is TimeWindow {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'window';
}
