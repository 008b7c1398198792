import { type Alert, PerPayment, type ScoredPayment } from '../demo/detector.js';

/** What `millrace bench fraud` emits: one small row per payment (and per expired silence timer). */
export interface Verdict {
  cardId: string;
  /** Alerts the payment (or the timer) raised: 0 for almost every payment. */
  alerts: number;
}

/**
 * The fraud demo's detector with a verdict per payment instead of its alerts, so the
 * benchmark records the latency of every input row, not only of the few that raise an alert: the
 * detector's rules, state and timers (see {@link PerPayment}), each row only the number of alerts.
 */
export class FraudVerdicts extends PerPayment<Verdict> {
  protected verdict(cardId: string, _p: ScoredPayment | null, alerts: Iterable<Alert>): Verdict {
    // The card-silent rule's timer makes a row of its own, alert or not.
    return { cardId, alerts: count(alerts) };
  }
}

function count(rows: Iterable<unknown>): number {
  let n = 0;
  for (const _ of rows) n++;
  return n;
}
