/**
 * Event times are milliseconds since the epoch. A column may hold a number (ms) or a Date; an ISO
 * string is read with Date.parse; a window (`{ start, end }`, an aggregation's output) stands for
 * its last instant, `end − 1`, as Spark's `window_time`. Anything else is NaN, which operators
 * report as a bad record.
 */
export function toEventTime(value: unknown): number {
  if (typeof value === 'number') return value;
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'string') return Date.parse(value);
  if (typeof value === 'object' && value !== null) {
    const end = (value as { end?: unknown }).end;
    if (typeof end === 'number' && typeof (value as { start?: unknown }).start === 'number') return end - 1;
  }
  return Number.NaN;
}

/** ISO-8601 form of an event time, as Spark's progress shows them. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
