import { defineJob } from '../api/job.js';
import { Trigger } from '../api/trigger.js';
import { sinks } from '../connectors/index.js';
import { fraudQuery, readPayments } from './fraud-pipeline.js';

export type { Alert } from './detector.js';
export type { CardWindow } from './fraud-pipeline.js';

/**
 * The fraud demo, one query: card payments from a generator (with injected fraud and a few
 * replayed payments, see payments.ts) → the chain of fraud-pipeline.ts ({@link fraudQuery}:
 * replays dropped, scored, joined with the merchant-risk table, the per-card detector, the per-card
 * spend per 10-s window) → a row per update on the console, as JSON. Parameters: `rate`
 * (payments/s), `partitions` (generator partitions, default 2), `checkpointInterval` (default 5 s),
 * `isolate` (true: the model on the UDF threads instead of the task's thread), `model` (false: the
 * chain without the model's column).
 */
export default defineJob((job) => {
  const rate = job.param('rate', 5000);
  const partitions = job.param('partitions', 2);
  const model = job.param('model', 'true') !== 'false';
  return fraudQuery(
    readPayments(job, rate, partitions, (g) => g, { replays: true }),
    model,
  )
    .writeStream(sinks.console({ format: 'json' }))
    .outputMode('update')
    .queryName('fraud-demo')
    .trigger(Trigger.realTime(job.param('checkpointInterval', '5 seconds')))
    .options({ isolateUdfs: job.param('isolate', 'false') === 'true' });
});
