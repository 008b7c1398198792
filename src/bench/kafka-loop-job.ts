import type { Payment } from '../demo/payments.js';
import { agg, defineJob, sinks, sources, window } from '../index.js';

/**
 * The job of `millrace bench stateless|windowed-count --kafka <brokers>` (K1, K2): card payments
 * from Kafka topic `inTopic` (JSON values, one Kafka partition per source partition), through
 * either a stateless filter and map (`case=stateless`) or a count per card and 1-s tumbling window
 * with a shuffle, in update mode (`case=count`), to Kafka topic `outTopic` (at-least-once,
 * idempotent producer). e2e latency is recorded at the sink for every row, from the record's
 * Kafka timestamp, which the load generator sets to the row's scheduled time.
 *
 * Parameters: `brokers`, `inTopic`, `outTopic`, `case`, `fetchMaxWait` (ms, default 100),
 * `spinMicros` (default: the engine's), `workers` (default 2).
 *
 * `millrace bench scale-out` (S1) runs the stateless case as a group: every member runs it, each
 * of its tasks a query of its own.
 */
export default defineJob((job) => {
  const brokers = job.param('brokers');
  const spinMicros = job.param('spinMicros', -1);
  const payments = job.readStream(
    sources.kafka<Payment>({
      name: 'payments',
      brokers,
      topic: job.param('inTopic'),
      startingOffsets: 'earliest',
      valueOnly: true,
      fetchMaxWait: job.param('fetchMaxWait', 100),
    }),
  );
  const out = sinks.kafka({ brokers, topic: job.param('outTopic') });
  const options = {
    workers: job.param('workers', 2),
    shufflePartitions: 2,
    ...(spinMicros >= 0 ? { spinMicros } : {}),
  };
  if (job.param('case', 'stateless') === 'stateless') {
    return payments
      .filter((p) => p.amount >= 0)
      .map((p) => ({
        key: p.cardId,
        value: { txId: p.txId, cardId: p.cardId, cents: Math.round(p.amount * 100), ts: p.ts },
      }))
      .writeStream(out)
      .queryName('bench-kafka-stateless')
      .options(options);
  }
  return payments
    .withWatermark('ts', '2 seconds')
    .groupBy(window('ts', '1 second'), 'cardId')
    .agg({ n: agg.count() })
    .writeStream(out)
    .outputMode('update')
    .queryName('bench-kafka-count')
    .options(options);
});
