import {
  type ExpiredTimer,
  type ProcessorHandle,
  StatefulProcessor,
  type TimerValues,
} from '../api/stateful-processor.js';
import { FraudDetector, type ScoredPayment } from '../demo/detector.js';

/** What `millrace bench fraud` emits: one small row per payment (and per expired silence timer). */
export interface Verdict {
  cardId: string;
  /** Alerts the payment (or the timer) raised: 0 for almost every payment. */
  alerts: number;
}

/**
 * The fraud demo's {@link FraudDetector} with a verdict per payment instead of its alerts, so the
 * benchmark records the latency of every input row, not only of the few that raise an alert. The
 * rules, their state and their timers are the detector's own: this processor runs a detector on
 * the same handle and counts what it yields. One instance per task (pass a factory to
 * transformWithState): the detector inside is per task too.
 */
export class FraudVerdicts extends StatefulProcessor<string, ScoredPayment, Verdict> {
  private readonly rules = new FraudDetector();

  override init(h: ProcessorHandle): void {
    this.rules.handle = h;
    this.rules.init(h);
  }

  *handleInputRows(cardId: string, rows: Iterable<ScoredPayment>, _t: TimerValues): Iterable<Verdict> {
    for (const p of rows) yield { cardId, alerts: count(this.rules.handleInputRows(cardId, [p])) };
  }

  override *handleExpiredTimer(cardId: string, t: TimerValues, timer: ExpiredTimer): Iterable<Verdict> {
    // The card-silent rule: an alert that no payment raised, so a verdict row of its own.
    yield { cardId, alerts: count(this.rules.handleExpiredTimer(cardId, t, timer)) };
  }
}

function count(rows: Iterable<unknown>): number {
  let n = 0;
  for (const _ of rows) n++;
  return n;
}
