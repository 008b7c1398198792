import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Producer } from 'kafkajs';
import { platformaticUnsupported } from '../../src/connectors/kafka/platformatic-membership.js';
import { type StreamingQuery, startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { TestBroker } from './broker/index.js';
import { kafkaClient } from './kafkajs-helpers.js';

const JOB = new URL('../fixtures/jobs/kafka.js', import.meta.url);
const tempDir = tempDirs('millrace-kafka-backlog');

/** The client libraries a Kafka source reads with, each skipped with the reason where it cannot run. */
const READERS = [
  { library: 'kafkajs', skip: false },
  { library: '@platformatic/kafka', skip: platformaticUnsupported() ?? false },
] as const;

/**
 * Partition 0 gets a payment a second, partition 1 ten a second, over the same 100 s of event
 * time: after a restart, partition 1's backlog is ten times partition 0's.
 */
const partitionRows = (partition: number, from: number, to: number): Payment[] => {
  const step = partition === 0 ? 1_000 : 100;
  const out: Payment[] = [];
  for (let ts = from; ts < to; ts += step)
    out.push({ card: `c${(ts / step) % 3}`, amount: partition + 1, ts });
  return out;
};

/** The count of each (card, window) the payments make, for the windows that end by `closedBy`. */
function expectedWindows(payments: Payment[], closedBy: number): string[] {
  const counts = new Map<string, number>();
  for (const p of payments) {
    const start = Math.floor(p.ts / 10_000) * 10_000;
    if (start + 10_000 > closedBy) continue;
    const key = `${p.card} ${start}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()].map(([k, n]) => `${k} ${n}`).sort();
}

const written = (q: StreamingQuery): string[] =>
  (q.sink('out').rows() as { card: string; window: { start: number }; n: number }[])
    .map((r) => `${r.card} ${r.window.start} ${r.n}`)
    .sort();

describe('a Kafka source restarted onto partitions with uneven backlogs (the test broker)', () => {
  let broker: TestBroker;
  let producer: Producer;
  let topics = 0;

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
    producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await broker?.close();
  });

  const send = (topic: string, partition: number, payments: Payment[]) =>
    producer.send({
      topic,
      messages: payments.map((p) => ({ key: p.card, value: JSON.stringify(p), partition })),
    });

  for (const { library, skip } of READERS) {
    it(`counts every payment of the backlog in its window, none late (${library})`, { skip }, async () => {
      const topic = `backlog-${topics++}`;
      broker.createTopic(topic, 2);
      const params = {
        brokers: broker.bootstrap,
        topic,
        case: 'count',
        outputMode: 'append',
        sink: 'memory',
        library,
      };
      const dir = tempDir();
      const all: Payment[] = [];
      for (const p of [0, 1]) {
        const first = partitionRows(p, 0, 10_000);
        all.push(...first);
        await send(topic, p, first);
      }
      const first = await startQuery(JOB, { params, clock: 'manual', checkpointLocation: dir });
      await first.processAllAvailable();
      await first.stop();

      for (const p of [0, 1]) {
        const backlog = partitionRows(p, 10_000, 100_000);
        all.push(...backlog);
        await send(topic, p, backlog);
      }
      const second = await startQuery(JOB, {
        params,
        clock: 'manual',
        checkpointLocation: dir,
        continueFrom: first,
      });
      try {
        await second.processAllAvailable();
        const dropped = second.recentProgress.reduce(
          (n, p) => n + p.stateOperators.reduce((m, s) => m + s.numRowsDroppedByWatermark, 0),
          0,
        );
        // The last payment is at 99.9 s, so the watermark ends at 94.9 s: windows up to [80, 90) close.
        assert.deepEqual(written(second), expectedWindows(all, 94_900));
        assert.equal(dropped, 0, 'no payment is late');
      } finally {
        await second.stop();
      }
    });
  }
});
