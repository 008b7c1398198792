import type { Payment } from '../demo/payments.js';
import { defineJob, sinks, sources } from '../index.js';

/**
 * The job of `millrace bench scale-out` (S1), run by every member of a group: card payments from
 * Kafka topic `inTopic` (JSON values), through a stateless filter and map, to Kafka topic
 * `outTopic` (at-least-once, idempotent producer). Each task of the group is a query of its own
 * with `workers` worker threads (default 1).
 */
export default defineJob((job) => {
  const brokers = job.param('brokers');
  return job
    .readStream(
      sources.kafka<Payment>({
        name: 'payments',
        brokers,
        topic: job.param('inTopic'),
        startingOffsets: 'earliest',
        valueOnly: true,
        fetchMaxWait: job.param('fetchMaxWait', 100),
      }),
    )
    .filter((p) => p.amount >= 0)
    .map((p) => ({
      key: p.cardId,
      value: { txId: p.txId, cardId: p.cardId, cents: Math.round(p.amount * 100), ts: p.ts },
    }))
    .writeStream(sinks.kafka({ brokers, topic: job.param('outTopic') }))
    .queryName('bench-scale-out')
    .options({ workers: job.param('workers', 1) });
});
