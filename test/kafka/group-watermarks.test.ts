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
    for (const topic of ['in', 'sparse']) broker.createTopic(topic, 6);
    for (const topic of ['out', 'sparse-out']) broker.createTopic(topic, 3);
    producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await broker?.close();
  });

  /** Payment `amount` goes to partition `amount % partitions` of `topic`. */
  const send = (payments: Payment[], topic: string, partitions: number) =>
    producer.send({
      topic,
      messages: payments.map((p) => ({
        key: p.card,
        value: JSON.stringify(p),
        partition: p.amount % partitions,
      })),
    });

  /** Ten payments per card in the first 10-s window, over the first `partitions` partitions of `topic`. */
  const firstWindow = (topic: string, partitions: number) =>
    send(
      Array.from({ length: CARDS * 10 }, (_, i) => ({
        card: `c${i % CARDS}`,
        amount: i,
        ts: WINDOW_START + i * 10,
      })),
      topic,
      partitions,
    );

  /** Then one card only, a minute later, over the same partitions. */
  const oneCardLater = (topic: string, partitions: number) =>
    send(
      Array.from({ length: partitions }, (_, i) => ({
        card: 'c0',
        amount: i,
        ts: WINDOW_START + 60_000 + i,
      })),
      topic,
      partitions,
    );

  /** The windows written to `topic`, as a read_committed reader sees them: `card@start` → count. */
  const windows = async (topic: string) => {
    const m = new Map<string, number>();
    for (const p of [0, 1, 2]) {
      for (const r of await broker.records(topic, p, { isolation: 'read_committed' })) {
        const row = JSON.parse(String(r.value)) as { card: string; window: { start: number }; n: number };
        const id = `${row.card}@${row.window.start}`;
        assert.equal(m.has(id), false, `window ${id} is written once`);
        m.set(id, row.n);
      }
    }
    return m;
  };

  const everyFirstWindow = () =>
    new Map(Array.from({ length: CARDS }, (_, c) => [`c${c}@${WINDOW_START}`, 10]));

  /** One member of a fresh group counts `topic` into `topic-out`, or `out` for `in`, until every first window is out. */
  async function countUntilClosed(topic: string, partitions: number, params: Record<string, string> = {}) {
    const outTopic = topic === 'in' ? 'out' : `${topic}-out`;
    await firstWindow(topic, partitions);
    const q = await startQuery(JOB, {
      params: {
        brokers: broker.bootstrap,
        topic,
        case: 'count',
        outputMode: 'append',
        outTopic,
        exactlyOnce: 'true',
        checkpointInterval: '200 ms',
        ...params,
      },
      checkpointLocation: tempDir(),
      group: { id: `windows-${topic}`, sessionTimeout: 3000 },
      metrics: false,
    });
    try {
      // The later card's rows reach one task above the cut; the other tasks hear of the new event
      // time through the watermark records alone.
      await oneCardLater(topic, partitions);
      await eventually(
        30_000,
        `the first window of all ${CARDS} cards written`,
        async () => (await windows(outTopic)).size >= CARDS,
        (changed) => broker.onData(changed),
      );
    } finally {
      await q.stop();
    }
    return windows(outTopic);
  }

  it("closes every card's window once one card's later rows move event time past it", async () => {
    assert.deepEqual(await countUntilClosed('in', 6), everyFirstWindow());
  });

  it("leaves out an upstream task whose partition has no rows once the watermark's idleTimeout passed", async () => {
    // Three of the six partitions get rows: the tasks of the other three never write a watermark,
    // and would hold every window open without the idle timeout.
    assert.deepEqual(await countUntilClosed('sparse', 3, { idleTimeout: '1 second' }), everyFirstWindow());
  });

  it('counts every row of uneven backlogs in its window after the group restarts on its checkpoint', async () => {
    // Partition 0 gets a payment a second, partition 1 ten a second: after the restart, partition
    // 1's backlog is ten times partition 0's, and its upstream task's watermark lags.
    broker.createTopic('backlog', 2);
    broker.createTopic('backlog-out', 3);
    const rows = (partition: number, from: number, to: number): Payment[] => {
      const step = partition === 0 ? 1_000 : 100;
      const out: Payment[] = [];
      for (let ts = from; ts < to; ts += step)
        out.push({ card: `c${(ts / step) % 3}`, amount: partition + 1, ts: WINDOW_START + ts });
      return out;
    };
    const sendTo = (partition: number, payments: Payment[]) =>
      producer.send({
        topic: 'backlog',
        messages: payments.map((p) => ({ key: p.card, value: JSON.stringify(p), partition })),
      });
    const all: Payment[] = [];
    const run = async (from: number, to: number) => {
      for (const p of [0, 1]) {
        const sent = rows(p, from, to);
        all.push(...sent);
        await sendTo(p, sent);
      }
      // The least watermark of the two upstream tasks, 5 s behind partition 0's last payment.
      const closedBy = WINDOW_START + to - 1_000 - 5_000;
      const expected = new Map<string, number>();
      for (const p of all) {
        const start = WINDOW_START + Math.floor((p.ts - WINDOW_START) / 10_000) * 10_000;
        if (start + 10_000 > closedBy) continue;
        const id = `${p.card}@${start}`;
        expected.set(id, (expected.get(id) ?? 0) + 1);
      }
      const q = await startQuery(JOB, {
        params: {
          brokers: broker.bootstrap,
          topic: 'backlog',
          case: 'count',
          outputMode: 'append',
          outTopic: 'backlog-out',
          exactlyOnce: 'true',
          checkpointInterval: '200 ms',
        },
        checkpointLocation: dir,
        group: { id: 'backlog', sessionTimeout: 3000 },
        metrics: false,
      });
      try {
        await eventually(
          30_000,
          `the ${expected.size} windows that close by ${closedBy} written`,
          async () => (await windows('backlog-out')).size >= expected.size,
          (changed) => broker.onData(changed),
        );
      } finally {
        await q.stop();
      }
      assert.deepEqual(await windows('backlog-out'), expected);
    };
    const dir = tempDir();
    await run(0, 30_000);
    await run(30_000, 100_000);
  });
});
