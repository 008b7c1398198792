import {
  type ExpiredTimer,
  type ListState,
  type ProcessorHandle,
  StatefulProcessor,
  type TimerValues,
  type ValueState,
} from '../api/stateful-processor.js';
import { distanceKm, type FraudKind, type Payment } from './payments.js';

/** A payment as the detector gets it: scored against the card's usual spend, with its merchant's risk. */
export interface ScoredPayment extends Payment {
  /** amount / the card's usual spend. */
  risk: number;
  /** From the merchant-risk table (absent for a merchant it does not know). */
  merchantRisk?: string;
  category?: string;
  /** The demo model's probability of fraud (fraud-model.ts), when the query runs it. */
  modelScore?: number;
}

/** What the demo prints. */
export interface Alert {
  rule: FraudKind;
  cardId: string;
  txId: string;
  amount: number;
  country: string;
  merchant: string;
  merchantRisk: string;
  category: string;
  detail: string;
  /** The model's probability of fraud for the payment, beside the rule's verdict (absent for card-silent). */
  modelScore?: number;
  /** Event time of the payment that raised it (for card-silent: when the silence was noticed). */
  ts: number;
}

/** How many payments of one card within BURST_WINDOW_MS make a burst. */
export const BURST_COUNT = 5;
export const BURST_WINDOW_MS = 10_000;
export const SPIKE_FACTOR = 10;
/** Faster than an airliner between two payments: the card is in two places. */
export const MAX_SPEED_KMH = 1_000;
/** A card in steady use: this many gaps in a row between these bounds... */
export const STEADY_GAPS = 3;
export const STEADY_GAP_MS = [1_000, 5_000] as const;
/** ...that then pays nothing for this long has gone silent. */
export const SILENCE_MS = 10_000;

interface LastSeen {
  country: string;
  ts: number;
}

interface Rhythm {
  gaps: number;
  last: number;
  /** The silence timer, when armed. */
  timer: number;
  txId: string;
  merchant: string;
  merchantRisk: string;
  category: string;
  country: string;
}

/**
 * The fraud detector: per card, in event time (its timers fire as the watermark passes them).
 *
 * - burst: {@link BURST_COUNT} payments within {@link BURST_WINDOW_MS} (a list of recent payment
 *   times, TTL 1 minute);
 * - impossible-travel: two countries further apart than {@link MAX_SPEED_KMH} allows in the time
 *   between the payments (the last country and time, TTL 1 hour);
 * - amount-spike: {@link SPIKE_FACTOR}× the card's usual spend or more;
 * - card-silent: a card paying at a steady pace ({@link STEADY_GAPS} gaps of 1–5 s) that then pays
 *   nothing for {@link SILENCE_MS} (an event-time timer, re-armed by every payment).
 */
export class FraudDetector extends StatefulProcessor<string, ScoredPayment, Alert> {
  private recent!: ListState<number>;
  private lastSeen!: ValueState<LastSeen>;
  private rhythm!: ValueState<Rhythm>;

  override init(h: ProcessorHandle): void {
    this.recent = h.listState<number>('recentPayments', { ttl: '1 minute' });
    this.lastSeen = h.valueState<LastSeen>('lastSeen', { ttl: '1 hour' });
    this.rhythm = h.valueState<Rhythm>('rhythm', { ttl: '1 hour' });
  }

  *handleInputRows(cardId: string, rows: Iterable<ScoredPayment>): Iterable<Alert> {
    for (const p of rows) yield* this.check(cardId, p);
  }

  private *check(cardId: string, p: ScoredPayment): Iterable<Alert> {
    const alert = (rule: FraudKind, detail: string): Alert => ({
      rule,
      cardId,
      txId: p.txId,
      amount: p.amount,
      country: p.country,
      merchant: p.merchant,
      merchantRisk: p.merchantRisk ?? 'unknown',
      category: p.category ?? 'unknown',
      detail,
      ...(p.modelScore === undefined ? {} : { modelScore: Math.round(p.modelScore * 1000) / 1000 }),
      ts: p.ts,
    });
    const recent = [...this.recent.get()].filter((t) => t > p.ts - BURST_WINDOW_MS);
    recent.push(p.ts);
    this.recent.put(recent);
    if (recent.length === BURST_COUNT)
      yield alert('burst', `${BURST_COUNT} payments within ${BURST_WINDOW_MS / 1000} s`);

    if (p.risk >= SPIKE_FACTOR) yield alert('amount-spike', `${p.risk.toFixed(1)}× the card's usual spend`);

    const last = this.lastSeen.get();
    if (last !== undefined && last.country !== p.country) {
      const hours = Math.max(p.ts - last.ts, 1) / 3_600_000;
      const km = distanceKm(last.country, p.country);
      if (km / hours > MAX_SPEED_KMH)
        yield alert(
          'impossible-travel',
          `${last.country} → ${p.country}: ${Math.round(km)} km in ${((p.ts - last.ts) / 1000).toFixed(1)} s`,
        );
    }
    this.lastSeen.update({ country: p.country, ts: p.ts });
    this.trackRhythm(p);
  }

  /** Counts steady gaps; from the STEADY_GAPS-th on, (re)arms the silence timer. */
  private trackRhythm(p: ScoredPayment): void {
    const h = this.getHandle();
    const r = this.rhythm.get();
    const gap = r === undefined ? -1 : p.ts - r.last;
    const steady = gap >= STEADY_GAP_MS[0] && gap <= STEADY_GAP_MS[1];
    const gaps = steady ? r!.gaps + 1 : 0;
    let timer = r?.timer ?? 0;
    if (timer !== 0) {
      h.deleteTimer(timer);
      timer = 0;
    }
    if (gaps >= STEADY_GAPS) {
      timer = p.ts + SILENCE_MS;
      h.registerTimer(timer);
    }
    this.rhythm.update({
      gaps,
      last: p.ts,
      timer,
      txId: p.txId,
      merchant: p.merchant,
      merchantRisk: p.merchantRisk ?? 'unknown',
      category: p.category ?? 'unknown',
      country: p.country,
    });
  }

  override *handleExpiredTimer(cardId: string, _t: TimerValues, timer: ExpiredTimer): Iterable<Alert> {
    const r = this.rhythm.get();
    this.rhythm.clear();
    if (r === undefined) return;
    yield {
      rule: 'card-silent',
      cardId,
      txId: r.txId,
      amount: 0,
      country: r.country,
      merchant: r.merchant,
      merchantRisk: r.merchantRisk,
      category: r.category,
      detail: `steady payments, then nothing for ${SILENCE_MS / 1000} s`,
      ts: timer.getExpiryTimeInMs(),
    };
  }
}

/**
 * The {@link FraudDetector}'s rules with one row per payment instead of its alerts: `verdict` makes
 * the row of each payment from the alerts it raised, and of each silence timer (payment null, at
 * the timer's time); null emits nothing. The rules, their state and their timers are the detector's
 * own, run on this processor's handle. Made per task (init makes the detector).
 */
export abstract class PerPayment<V> extends StatefulProcessor<string, ScoredPayment, V> {
  private rules!: FraudDetector;

  override init(h: ProcessorHandle): void {
    this.rules = new FraudDetector();
    this.rules.handle = h;
    this.rules.init(h);
  }

  /** The row of `payment` (null: a timer's) from the alerts it raised, which it must read. */
  protected abstract verdict(
    cardId: string,
    payment: ScoredPayment | null,
    alerts: Iterable<Alert>,
    ts: number,
  ): V | null;

  *handleInputRows(cardId: string, rows: Iterable<ScoredPayment>, _t: TimerValues): Iterable<V> {
    for (const p of rows) {
      const v = this.verdict(cardId, p, this.rules.handleInputRows(cardId, [p]), p.ts);
      if (v !== null) yield v;
    }
  }

  override *handleExpiredTimer(cardId: string, t: TimerValues, timer: ExpiredTimer): Iterable<V> {
    const alerts = this.rules.handleExpiredTimer(cardId, t, timer);
    const v = this.verdict(cardId, null, alerts, timer.getExpiryTimeInMs());
    if (v !== null) yield v;
  }
}

/** A row of the demo's detector: a payment, or a card's silence, with the alerts it raised. */
export interface CardVerdict {
  cardId: string;
  /** The payment's; null for a silence. */
  txId: string | null;
  /** The payment's amount; 0 for a silence. */
  amount: number;
  /** Event time: the payment's, or when the silence was noticed (the timer's time). */
  ts: number;
  alerts: Alert[];
  /** How many alerts: `alerts.length`. */
  raised: number;
}

const NO_ALERTS: Alert[] = [];

/**
 * The demo's detector: a {@link CardVerdict} for every payment, and one for each silence that
 * raised its alert, so the per-card spend after it sees every payment and every alert.
 */
export class CardVerdicts extends PerPayment<CardVerdict> {
  protected verdict(
    cardId: string,
    p: ScoredPayment | null,
    raised: Iterable<Alert>,
    ts: number,
  ): CardVerdict | null {
    const alerts = [...raised];
    if (p === null && alerts.length === 0) return null;
    return {
      cardId,
      txId: p?.txId ?? null,
      amount: p?.amount ?? 0,
      ts,
      alerts: alerts.length === 0 ? NO_ALERTS : alerts,
      raised: alerts.length,
    };
  }
}
