/**
 * Event times are milliseconds since the epoch. A column may hold a number (ms) or a Date; an ISO
 * string is read with Date.parse. Anything else is NaN, which operators report as a bad record.
 */
export function toEventTime(value: unknown): number {
  if (typeof value === 'number') return value;
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'string') return Date.parse(value);
  return Number.NaN;
}

/** ISO-8601 form of an event time, as Spark's progress shows them. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
