import { parentPort, workerData } from 'node:worker_threads';
import type { Message } from 'kafkajs';
import { kafkaClient } from '../connectors/kafka/client.js';
import { keyedPayment } from '../demo/payments.js';
import { dueRows, scheduledAt } from './kafka-load-schedule.js';

/** What the load generator is told (see kafka-load.ts). */
export interface KafkaLoadSpec {
  brokers: string[];
  topic: string;
  partitions: number;
  rowsPerSecond: number;
  keys: number;
}

/**
 * A constant-rate Kafka producer on its own thread: row `i` is scheduled at {@link scheduledAt},
 * the first whole millisecond at or after `start + (i + 1) / rate`, sent once due, and stamped with
 * its scheduled time as its Kafka timestamp, so the engine's e2e latency counts from when the row
 * was due, whatever the producer or the broker did (no coordinated omission). Kafka timestamps are
 * whole milliseconds: a row due between two of them would be stamped early, and every figure would
 * grow by up to 1 ms. One send is in flight at a time; rows due meanwhile go in the next. Stops on
 * a `stop` message.
 */
async function run(spec: KafkaLoadSpec): Promise<void> {
  const kafka = kafkaClient(spec.brokers, { clientId: 'millrace-bench-load' });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  let stopping = false;
  const onMessage = (m: unknown) => {
    if (m === 'stop') stopping = true;
  };
  parentPort!.on('message', onMessage);
  const generate = keyedPayment(spec.keys, spec.partitions);
  const start = Date.now();
  const rate = spec.rowsPerSecond;
  let next = 0;
  parentPort!.postMessage({ type: 'started', start });
  while (!stopping) {
    const due = dueRows(start, rate, Date.now());
    if (due <= next) {
      await new Promise((r) => setTimeout(r, Math.max(0, scheduledAt(start, rate, next) - Date.now())));
      continue;
    }
    const byPartition: Message[][] = Array.from({ length: spec.partitions }, () => []);
    for (; next < due; next++) {
      const partition = next % spec.partitions;
      const scheduled = scheduledAt(start, rate, next);
      const payment = generate(partition, Math.floor(next / spec.partitions), scheduled);
      byPartition[partition]!.push({
        key: payment.cardId,
        value: JSON.stringify(payment),
        timestamp: String(scheduled),
      });
    }
    await producer.sendBatch({
      acks: 1,
      topicMessages: [
        {
          topic: spec.topic,
          messages: byPartition.flatMap((messages, partition) => messages.map((m) => ({ ...m, partition }))),
        },
      ],
    });
  }
  // A port with a message listener keeps the thread alive: without this, the thread outlived the
  // disconnect until the runner terminated it, 10 s later.
  parentPort!.off('message', onMessage);
  parentPort!.postMessage({ type: 'sent', rows: next });
  await producer.disconnect();
}

run(workerData as KafkaLoadSpec).catch((e: unknown) => {
  parentPort!.postMessage({ type: 'failed', message: (e as Error).stack ?? String(e) });
});
