import { invalidArgument } from '../errors.js';
import { type Duration, parseDuration } from '../util/duration.js';

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
  column: string,
  size: Duration,
  slide?: Duration,
  startOffset: Duration = 0,
): TimeWindow {
  if (typeof column !== 'string' || column === '')
    throw invalidArgument('window(column, size): name the event-time column');
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

/** Starts of every window of `w` that contains event time `t`, latest first. */
export function windowStarts(w: TimeWindow, t: number, out: number[]): number[] {
  out.length = 0;
  const last = t - ((((t - w.startOffsetMs) % w.slideMs) + w.slideMs) % w.slideMs);
  for (let start = last; start > t - w.sizeMs; start -= w.slideMs) out.push(start);
  return out;
}

export function isTimeWindow(v: unknown): v is TimeWindow {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'window';
}
