/**
 * The load generator's schedule (kafka-load-worker.ts): row `i` of a run started at `start` is due
 * at the first whole millisecond at or after `start + (i + 1) / rate`, so its Kafka timestamp
 * (whole milliseconds) is exactly when it was due.
 */

/** When row `i` is due (ms, whole): the first whole ms at or after `start + (i + 1) / rate`. */
export function scheduledAt(start: number, rowsPerSecond: number, i: number): number {
  // An integer divided by an integer: exact when the quotient is whole, so ceil never overshoots.
  return start + Math.ceil(((i + 1) * 1000) / rowsPerSecond);
}

/** How many rows are due at `now` (whole ms): those whose {@link scheduledAt} is at most `now`. */
export function dueRows(start: number, rowsPerSecond: number, now: number): number {
  return Math.floor(((now - start) * rowsPerSecond) / 1000);
}
