import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { type MillraceError, type StreamingQuery, startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { KCAT, LIBRDKAFKA_MOCK, missing } from '../peers.js';
import { kcatConsume } from './kcat.js';
import { type MockCluster, startMockCluster } from './mock-cluster.js';

const peersMissing = missing(LIBRDKAFKA_MOCK, KCAT);
const job = new URL('../fixtures/jobs/kafka.js', import.meta.url);

const pay = (card: string, amount: number, ts = 0): Payment => ({ card, amount, ts });

describe('sinks.kafka against librdkafka’s mock cluster (read back with kcat)', {
  skip: peersMissing,
}, () => {
  let cluster: MockCluster;
  let producer: Producer;
  let topics = 0;

  async function topic(partitions: number): Promise<string> {
    const name = `t-${topics++}`;
    await cluster.createTopic(name, partitions);
    return name;
  }

  function start(params: Record<string, string>): Promise<StreamingQuery> {
    // The mock names no controller kafkajs can find: its producers cannot be idempotent.
    return startQuery(job, {
      params: { brokers: cluster.bootstrap, idempotent: 'false', ...params },
      clock: 'manual',
    });
  }

  before(async () => {
    cluster = await startMockCluster({ topics: [] });
    producer = new Kafka({ brokers: cluster.brokers, logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await cluster?.close();
  });

  it('writes each row with its key and its value as JSON; kcat reads them all', async () => {
    const input = await topic(2);
    const output = await topic(3);
    const payments = [pay('a', 1), pay('b', 2), pay('a', 3), pay('c', 4)];
    await producer.send({
      topic: input,
      messages: payments.map((p, i) => ({ value: JSON.stringify(p), partition: i % 2 })),
    });
    const q = await start({ topic: input, outTopic: output, case: 'copy' });
    try {
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    const read = await kcatConsume(cluster.bootstrap, output, {});
    assert.deepEqual(
      read.map((m) => `${m.key} ${m.value}`).sort(),
      payments.map((p) => `${p.card} ${JSON.stringify(p)}`).sort(),
    );
    // Same key, same partition (the default partitioner hashes the key as Kafka's Java client does).
    const partitionsOfA = new Set(read.filter((m) => m.key === 'a').map((m) => m.partition));
    assert.equal(partitionsOfA.size, 1);
  });

  it('stamps each record with its source row’s time under timestamp: source, and with its write time by default', async () => {
    const input = await topic(1);
    const stamped = await topic(1);
    const plain = await topic(1);
    const times = [1_700_000_000_123, 1_700_000_004_567];
    await producer.send({
      topic: input,
      messages: times.map((t, i) => ({ value: JSON.stringify(pay('a', i)), timestamp: String(t) })),
    });
    const before = Date.now();
    for (const [outTopic, timestamp] of [
      [stamped, 'source'],
      [plain, 'write'],
    ]) {
      const q = await start({ topic: input, outTopic: outTopic!, case: 'copy', timestamp: timestamp! });
      try {
        await q.processAllAvailable();
      } finally {
        await q.stop();
      }
    }
    assert.deepEqual(
      (await kcatConsume(cluster.bootstrap, stamped, {})).map((m) => m.timestamp),
      times,
    );
    for (const m of await kcatConsume(cluster.bootstrap, plain, {})) assert.ok(m.timestamp >= before);
  });

  it('writes an aggregate’s updates (rows without a value field are the value)', async () => {
    const input = await topic(1);
    const output = await topic(1);
    await producer.send({
      topic: input,
      messages: [pay('a', 5, 1000), pay('a', 7, 2000), pay('b', 1, 3000)].map((p) => ({
        value: JSON.stringify(p),
      })),
    });
    const q = await start({ topic: input, outTopic: output, case: 'count' });
    try {
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    const rows = (await kcatConsume(cluster.bootstrap, output, {})).map(
      (m) => JSON.parse(m.value!) as { card: string; n: number; total: number },
    );
    const last = new Map(rows.map((r) => [r.card, `${r.n}/${r.total}`]));
    assert.deepEqual(Object.fromEntries(last), { a: '2/12', b: '1/1' });
  });

  it('a topic the brokers refuse fails the query (the epoch is not acknowledged)', async () => {
    const input = await topic(1);
    const output = await topic(1);
    await producer.send({ topic: input, messages: [{ value: JSON.stringify(pay('a', 1)) }] });
    // Produce requests fail with INVALID_RECORD (87), which kafkajs does not retry.
    await cluster.pushRequestErrors(0, 10, 87);
    const q = await start({ topic: input, outTopic: output, case: 'copy' });
    await assert.rejects(q.awaitTermination(), (e: MillraceError) => {
      assert.equal(e.code, 'TASK_FAILED');
      assert.match(e.message, /KafkaSink\[.*\] partition 0: cannot send/);
      return true;
    });
  });
});
