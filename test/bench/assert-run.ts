import assert from 'node:assert/strict';
import type { SystemRun } from '../../src/bench/types.js';
import type { LatencySummary } from '../../src/metrics/latency.js';

/** Rows were recorded, and the percentiles are finite and ordered. */
export function assertLatency(l: LatencySummary, what: string): void {
  assert.ok(l.count > 0, `${what}: rows were recorded`);
  const order = [l.p50, l.p90, l.p99, l.p999, l.p9999, l.max];
  for (const v of order) assert.ok(Number.isFinite(v) && v >= 0, `${what}: finite percentiles, got ${order}`);
  // Percentiles are the top of their HDR bucket (3 significant digits), max is exact: allow 0.1 %.
  for (let i = 1; i < order.length; i++) {
    assert.ok(order[i - 1]! <= order[i]! * 1.001 + 0.001, `${what}: ordered, got ${order}`);
  }
}

/**
 * The run recorded the latency of every input row: rows emitted in the window (each with its
 * latency) + rows still due at its end + rows dropped late = at least the rows due in the window
 * (more when the window began with a backlog). The backlog is sampled at the last progress report,
 * up to a report interval before the window ends: 10 % slack.
 */
export function assertEveryRowRecorded(run: SystemRun, what: string): void {
  const due = (run.rate * run.windowMs) / 1000;
  const handled = run.latency.count + (run.backlog.final ?? 0) + (run.state?.droppedLate ?? 0);
  assert.ok(
    handled >= 0.9 * due,
    `${what}: ${run.latency.count} rows recorded (+ ${run.backlog.final} due, ${run.state?.droppedLate ?? 0} late) of ${Math.round(due)} due`,
  );
}
