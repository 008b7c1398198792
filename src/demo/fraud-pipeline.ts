import { agg } from '../api/aggregates.js';
import { udf } from '../api/expressions.js';
import type { JobContext } from '../api/job.js';
import { statics } from '../api/join.js';
import type { ProcessorSource } from '../api/stateful-processor.js';
import type { Stream } from '../api/stream.js';
import { window } from '../api/window.js';
import { sources } from '../connectors/index.js';
import { type Alert, CardVerdicts, type ScoredPayment } from './detector.js';
import { fraudModel } from './fraud-model.js';
import {
  type CardPaymentOptions,
  CardPaymentStream,
  type MerchantRisk,
  merchantRiskTable,
  type Payment,
  usualSpend,
} from './payments.js';

/**
 * The stages of the fraud demo's detector query, shared with the benchmarks that measure it
 * (`millrace bench fraud`, `millrace bench stream-static-join`), so that both run the same plan.
 */

/**
 * The demo's generated payments with injected fraud (payments.ts), `rate` a second over
 * `partitions` generator partitions; `wrap` may wrap the generator (a benchmark's clock probe);
 * `options.replays` sends a few payments twice (the demo's).
 */
export function readPayments(
  job: JobContext,
  rate: number,
  partitions: number,
  wrap: (generate: CardPaymentStream['generate']) => CardPaymentStream['generate'] = (g) => g,
  options: CardPaymentOptions = {},
): Stream<Payment> {
  const payments = new CardPaymentStream(rate, partitions, options);
  return job.readStream(
    sources.generator<Payment>({
      name: 'payments',
      rowsPerSecond: rate,
      partitions,
      generate: wrap(payments.generate),
    }),
  );
}

/** A payment with its merchant's risk level and category (absent for a merchant the table lacks). */
export type PaymentWithMerchant = Payment & Partial<Omit<MerchantRisk, 'merchant'>>;

/**
 * The stream–static join with the merchant-risk table (loaded once per worker), left outer: a
 * payment at a merchant the table does not know keeps its row. Stateless: no shuffle.
 */
export function joinMerchantRisk<T extends Payment>(payments: Stream<T>): Stream<T & PaymentWithMerchant> {
  return payments.join(statics.fromFunction(merchantRiskTable), {
    on: 'merchant',
    type: 'leftOuter',
    name: 'merchant-risk',
  });
}

/**
 * Payments → a risk score (a scalar UDF: amount / the card's usual spend) → with `model`, the
 * probability of fraud from the demo's vectorised model (an Arrow UDF, fraud-model.ts) → the
 * merchant-risk join.
 */
export function scorePayments(payments: Stream<Payment>, model: boolean): Stream<ScoredPayment> {
  const risk = udf('risk', (amount: number, cardId: string) => amount / usualSpend(cardId));
  const scored = payments.withColumn('risk', risk('amount', 'cardId'));
  return joinMerchantRisk(model ? scored.withColumn('modelScore', fraudModel) : scored);
}

/**
 * The scored payments ({@link scorePayments}) → a watermark 2 s behind the payment times →
 * grouped by card (a hash shuffle) → `processor` (transformWithState in event time, so its timers
 * fire as the watermark passes them): the detector the benchmarks measure.
 */
export function detectFraud<O>(
  payments: Stream<Payment>,
  processor: ProcessorSource<string, ScoredPayment, O, unknown>,
  model = false,
): Stream<O> {
  return scorePayments(payments, model)
    .withWatermark('ts', '2 seconds')
    .groupByKey((p: ScoredPayment) => p.cardId)
    .transformWithState(processor, { timeMode: 'eventTime', outputMode: 'append', name: 'fraud-detector' });
}

/** A row of the demo's query: one card's spend in one 10-s window so far, and the latest alerts. */
export interface CardWindow {
  cardId: string;
  window: { start: number; end: number };
  /** Paid in the window, replays not counted. */
  spent: number;
  payments: number;
  /** Alerts the card raised in the window. */
  alerts: number;
  /** The alerts of the payment (or silence) this row is the update for; mostly none. */
  latest: Alert[];
}

/**
 * The fraud demo as one query, a chain of three stateful operators: payments → a watermark 2 s
 * behind the payment times → replayed payments dropped (`dropDuplicatesWithinWatermark('txId')`)
 * → scored and joined with the merchant-risk table ({@link scorePayments}; `model`: with the
 * model's probability, the default) → per
 * card, the detector ({@link CardVerdicts}: a verdict for each payment, its rows at the payment's
 * event time) → per card and 10-s window, the spend, the payments and the alerts, in update mode:
 * each verdict updates its window's row at once, so an alert is out as soon as it is raised, and a
 * window is forgotten when the watermark passes its end.
 */
export function fraudQuery(payments: Stream<Payment>, model = true): Stream<CardWindow> {
  const unique = payments.withWatermark('ts', '2 seconds').dropDuplicatesWithinWatermark('txId');
  return scorePayments(unique, model)
    .groupByKey((p: ScoredPayment) => p.cardId)
    .transformWithState(() => new CardVerdicts(), {
      timeMode: 'eventTime',
      outputMode: 'append',
      eventTimeColumn: 'ts',
      name: 'fraud-detector',
    })
    .groupBy(window('ts', '10 seconds'), 'cardId')
    .agg({
      spent: agg.sum('amount'),
      payments: agg.count('txId'),
      alerts: agg.sum('raised'),
      latest: agg.last('alerts'),
    });
}
