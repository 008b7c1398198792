import { udf } from '../../api/expressions.js';
import { defineJob } from '../../api/job.js';
import { Trigger } from '../../api/trigger.js';
import { sinks, sources } from '../../connectors/index.js';
import { BLOCKED_COUNTRIES, cardPayments, type Payment, usualSpend } from './card-payments.js';

/** What the demo prints. */
export interface Alert {
  rule: 'burst' | 'amount-spike' | 'blocked-country';
  cardId: string;
  txId: string;
  amount: number;
  country: string;
  detail: string;
}

type Scored = Payment & { risk: number };

/** How many payments of one card within BURST_WINDOW_MS make a burst. */
const BURST_COUNT = 5;
const BURST_WINDOW_MS = 10_000;
const SPIKE_FACTOR = 10;

/**
 * The fraud demo: card payments from a generator → a risk score (a scalar UDF) → repartition by
 * card → three rules (blocked country, amount spike, burst of payments per card) → alerts on the
 * console. Parameters: `rate` (payments/s), `cards` (size of the card pool), `partitions`.
 */
export default defineJob((job) => {
  const rate = job.param('rate', 5000);
  const cards = job.param('cards', Math.max(20_000, rate * 20));
  const blocked = new Set(BLOCKED_COUNTRIES);
  const risk = udf('risk', (amount: number, cardId: string) => amount / usualSpend(cardId));
  // Recent payment times per card. Lives in the worker that owns the card's partition; cards
  // never change partition, so one map per worker is enough (not checkpointed in this demo).
  const recent = new Map<string, number[]>();
  let seen = 0;

  const rules = (p: Scored): Alert[] => {
    const alerts: Alert[] = [];
    const base = { cardId: p.cardId, txId: p.txId, amount: p.amount, country: p.country };
    if (blocked.has(p.country))
      alerts.push({ rule: 'blocked-country', ...base, detail: `payment from ${p.country}` });
    if (p.risk >= SPIKE_FACTOR) {
      alerts.push({ rule: 'amount-spike', ...base, detail: `${p.risk.toFixed(1)}× the card's usual spend` });
    }
    const times = (recent.get(p.cardId) ?? []).filter((t) => t > p.ts - BURST_WINDOW_MS);
    times.push(p.ts);
    recent.set(p.cardId, times);
    if (times.length === BURST_COUNT) {
      alerts.push({
        rule: 'burst',
        ...base,
        detail: `${BURST_COUNT} payments within ${BURST_WINDOW_MS / 1000} s`,
      });
    }
    if (++seen % 50_000 === 0) {
      for (const [card, t] of recent) if (t.at(-1)! <= p.ts - BURST_WINDOW_MS) recent.delete(card);
    }
    return alerts;
  };

  return job
    .readStream(
      sources.generator({
        name: 'payments',
        rowsPerSecond: rate,
        partitions: job.param('partitions', 2),
        generate: cardPayments(cards),
      }),
    )
    .withColumn('risk', risk('amount', 'cardId'))
    .repartition('cardId')
    .flatMap((p: Scored) => rules(p), { name: 'fraud-rules' })
    .writeStream(sinks.console({ format: 'json' }))
    .queryName('fraud-demo')
    .trigger(Trigger.realTime('10 seconds'));
});
