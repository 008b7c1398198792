import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Producer } from 'kafkajs';
import { startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { TestBroker } from './broker/index.js';
import { eventually, kafkaClient } from './kafkajs-helpers.js';

const JOB = new URL('../fixtures/jobs/kafka.js', import.meta.url);
const CARDS = 7;
const WINDOW_START = 1_000_000;
const tempDir = tempDirs('millrace-group-watermarks');

/**
 * A windowed count in append mode run by a group: a window is written once the watermark passes
 * its end. Each task above the repartition topic reads only the rows whose key hashes to its
 * partition; the watermark records the upstream tasks write with their rows bring it the
 * watermark of every source partition, so its windows close as the stream's event time moves on,
 * even when its own partition gets no more rows.
 */
describe('watermarks across the repartition topic of a group', () => {
  let broker: TestBroker;
  let producer: Producer;

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
    broker.createTopic('in', 6);
    broker.createTopic('out', 3);
    producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await broker?.close();
  });

  const send = (payments: Payment[]) =>
    producer.send({
      topic: 'in',
      messages: payments.map((p) => ({ key: p.card, value: JSON.stringify(p), partition: p.amount % 6 })),
    });

  /** The windows written to `out`, as a read_committed reader sees them: `card@start` → count. */
  const windows = async () => {
    const m = new Map<string, number>();
    for (const p of [0, 1, 2]) {
      for (const r of await broker.records('out', p, { isolation: 'read_committed' })) {
        const row = JSON.parse(String(r.value)) as { card: string; window: { start: number }; n: number };
        const id = `${row.card}@${row.window.start}`;
        assert.equal(m.has(id), false, `window ${id} is written once`);
        m.set(id, row.n);
      }
    }
    return m;
  };

  it("closes every card's window once one card's later rows move event time past it", async () => {
    // Ten payments per card in the first 10-s window, over all six source partitions.
    await send(
      Array.from({ length: CARDS * 10 }, (_, i) => ({
        card: `c${i % CARDS}`,
        amount: i,
        ts: WINDOW_START + i * 10,
      })),
    );
    const q = await startQuery(JOB, {
      params: {
        brokers: broker.bootstrap,
        case: 'count',
        outputMode: 'append',
        outTopic: 'out',
        exactlyOnce: 'true',
        checkpointInterval: '200 ms',
      },
      checkpointLocation: tempDir(),
      group: { id: 'windows', sessionTimeout: 3000 },
      metrics: false,
    });
    try {
      // Then one card only, a minute later: its rows reach one task above the cut; the other
      // tasks hear of the new event time through the watermark records alone.
      await send(
        Array.from({ length: 6 }, (_, i) => ({ card: 'c0', amount: i, ts: WINDOW_START + 60_000 + i })),
      );
      await eventually(
        30_000,
        `the first window of all ${CARDS} cards written`,
        async () => (await windows()).size >= CARDS,
        (changed) => broker.onData(changed),
      );
    } finally {
      await q.stop();
    }
    const expected = new Map(Array.from({ length: CARDS }, (_, c) => [`c${c}@${WINDOW_START}`, 10]));
    assert.deepEqual(await windows(), expected);
  });
});
