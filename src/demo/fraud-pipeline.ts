import { udf } from '../api/expressions.js';
import type { JobContext } from '../api/job.js';
import { statics } from '../api/join.js';
import type { ProcessorSource } from '../api/stateful-processor.js';
import type { Stream } from '../api/stream.js';
import { sources } from '../connectors/index.js';
import type { ScoredPayment } from './detector.js';
import { fraudModel } from './fraud-model.js';
import {
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
 * `partitions` generator partitions; `wrap` may wrap the generator (a benchmark's clock probe).
 */
export function readPayments(
  job: JobContext,
  rate: number,
  partitions: number,
  wrap: (generate: CardPaymentStream['generate']) => CardPaymentStream['generate'] = (g) => g,
): Stream<Payment> {
  const payments = new CardPaymentStream(rate, partitions);
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
 * probability of fraud from the demo's vectorised model (an Arrow UDF, fraud-model.ts) → the merchant-risk join
 * → a watermark 2 s behind the payment times → grouped by card (a hash shuffle) → `processor`
 * (transformWithState in event time, so its timers fire as the watermark passes them).
 */
export function detectFraud<O>(
  payments: Stream<Payment>,
  processor: ProcessorSource<string, ScoredPayment, O, unknown>,
  model = false,
): Stream<O> {
  const risk = udf('risk', (amount: number, cardId: string) => amount / usualSpend(cardId));
  const scored = payments.withColumn('risk', risk('amount', 'cardId'));
  return joinMerchantRisk(model ? scored.withColumn('modelScore', fraudModel) : scored)
    .withWatermark('ts', '2 seconds')
    .groupByKey((p: ScoredPayment) => p.cardId)
    .transformWithState(processor, { timeMode: 'eventTime', outputMode: 'append', name: 'fraud-detector' });
}
