import { defineJob } from '../api/job.js';
import { Trigger } from '../api/trigger.js';
import { sinks } from '../connectors/index.js';
import { FraudDetector } from './detector.js';
import { detectFraud, readPayments } from './fraud-pipeline.js';

export type { Alert } from './detector.js';

/**
 * The fraud demo's detector: card payments from a generator (with injected fraud, see
 * payments.ts) → a risk score (a scalar UDF) → the probability of fraud from a small vectorised
 * model (an Arrow UDF on the UDF thread, fraud-model.ts) → the merchant's risk level and category (a
 * stream–static join against the merchant-risk table, loaded once per worker) → a watermark 2 s
 * behind the payment times → grouped by card → the {@link FraudDetector} (transformWithState with
 * TTL'd state and event-time timers) → alerts on the console (see fraud-pipeline.ts). Parameters:
 * `rate` (payments/s), `partitions` (generator partitions, default 2), `checkpointInterval`
 * (default 5 s).
 */
export default defineJob((job) => {
  const rate = job.param('rate', 5000);
  const partitions = job.param('partitions', 2);
  const source = readPayments(job, rate, partitions);
  return detectFraud(source, new FraudDetector(), true)
    .writeStream(sinks.console({ format: 'json' }))
    .queryName('fraud-demo')
    .trigger(Trigger.realTime(job.param('checkpointInterval', '5 seconds')));
});
