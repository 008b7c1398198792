import { udf } from '../../api/expressions.js';
import { defineJob } from '../../api/job.js';
import { statics } from '../../api/join.js';
import { Trigger } from '../../api/trigger.js';
import { sinks, sources } from '../../connectors/index.js';
import { CardPaymentStream, merchantRiskTable, type Payment, usualSpend } from './card-payments.js';
import { FraudDetector, type ScoredPayment } from './detector.js';

export type { Alert } from './detector.js';

/**
 * The fraud demo's detector: card payments from a generator (with injected fraud, see
 * card-payments.ts) → a risk score (a scalar UDF) → the merchant's risk level and category (a
 * stream–static join against the merchant-risk table, loaded once per worker) → a watermark 2 s behind the payment times →
 * grouped by card → the {@link FraudDetector} (transformWithState with TTL'd state and event-time
 * timers) → alerts on the console. Parameters: `rate` (payments/s), `partitions` (generator
 * partitions, default 2), `checkpointInterval` (default 5 s).
 */
export default defineJob((job) => {
  const rate = job.param('rate', 5000);
  const partitions = job.param('partitions', 2);
  const payments = new CardPaymentStream(rate, partitions);
  const risk = udf('risk', (amount: number, cardId: string) => amount / usualSpend(cardId));
  return job
    .readStream(
      sources.generator<Payment>({
        name: 'payments',
        rowsPerSecond: rate,
        partitions,
        generate: payments.generate,
      }),
    )
    .withColumn('risk', risk('amount', 'cardId'))
    .join(statics.fromFunction(merchantRiskTable), {
      on: 'merchant',
      type: 'leftOuter',
      name: 'merchant-risk',
    })
    .withWatermark('ts', '2 seconds')
    .groupByKey((p: ScoredPayment) => p.cardId)
    .transformWithState(new FraudDetector(), {
      timeMode: 'eventTime',
      outputMode: 'append',
      name: 'fraud-detector',
    })
    .writeStream(sinks.console({ format: 'json' }))
    .queryName('fraud-demo')
    .trigger(Trigger.realTime(job.param('checkpointInterval', '5 seconds')));
});
