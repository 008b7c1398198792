import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { platformaticUnsupported } from '../../src/connectors/kafka/platformatic-membership.js';
import {
  type KafkaRow,
  type MillraceError,
  type StreamingQuery,
  type StreamingQueryProgress,
  startQuery,
} from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { KCAT, LIBRDKAFKA_MOCK, missing } from '../peers.js';
import { kcatConsume, kcatProduce } from './kcat.js';
import { type MockCluster, startMockCluster } from './mock-cluster.js';

const peersMissing = missing(LIBRDKAFKA_MOCK, KCAT);

/** The client libraries a Kafka source reads with, each skipped with the reason where it cannot run. */
const READERS = [
  { library: 'kafkajs', skip: false },
  { library: '@platformatic/kafka', skip: platformaticUnsupported() ?? false },
] as const;
const job = new URL('../fixtures/jobs/kafka.js', import.meta.url);
const tempDir = tempDirs('millrace-kafka-source');

const pay = (card: string, amount: number, ts = 0): Payment => ({ card, amount, ts });

/** What the memory sink saw, as `topic-partition@offset key amount`, in offset order per partition. */
function seen(q: StreamingQuery): string[] {
  return (q.sink('out').rows() as KafkaRow<Payment>[])
    .map((r) => `${r.topic}-${r.partition}@${r.offset} ${r.key} ${r.value.amount}`)
    .sort();
}

describe('sources.kafka against librdkafka’s mock cluster', { skip: peersMissing }, () => {
  let cluster: MockCluster;
  let producer: Producer;
  let topics = 0;

  /** A fresh topic (the mock has no CreateTopics API: the launcher makes it). */
  async function topic(partitions: number): Promise<string> {
    const name = `in-${topics++}`;
    await cluster.createTopic(name, partitions);
    return name;
  }

  async function produce(name: string, partition: number, payments: Payment[]): Promise<void> {
    await producer.send({
      topic: name,
      messages: payments.map((p) => ({ key: p.card, value: JSON.stringify(p), partition })),
    });
  }

  function start(params: Record<string, string>, checkpoint?: string): Promise<StreamingQuery> {
    return startQuery(job, {
      params: { brokers: cluster.bootstrap, ...params },
      clock: 'manual',
      checkpointLocation: checkpoint,
    });
  }

  before(async () => {
    cluster = await startMockCluster({ topics: [] });
    const kafka = new Kafka({ brokers: cluster.brokers, logLevel: logLevel.NOTHING });
    // The mock names no controller kafkajs can find, so producers here are not idempotent.
    producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await cluster?.close();
  });

  it('reads every partition from the earliest offset, with key, value, offset, timestamp and headers', async () => {
    const name = await topic(2);
    await produce(name, 0, [pay('a', 1), pay('b', 2)]);
    await producer.send({
      topic: name,
      messages: [
        { key: 'c', value: JSON.stringify(pay('c', 3)), partition: 1, headers: { origin: 'pos-7' } },
      ],
    });
    const q = await start({ topic: name });
    try {
      await q.processAllAvailable();
      assert.deepEqual(seen(q), [`${name}-0@0 a 1`, `${name}-0@1 b 2`, `${name}-1@0 c 3`]);
      const c = (q.sink('out').rows() as KafkaRow<Payment>[]).find((r) => r.key === 'c')!;
      assert.deepEqual(c.headers, { origin: 'pos-7' });
      assert.ok(Math.abs(c.timestamp - Date.now()) < 60_000, 'the record timestamp is the producer’s');
      // Rows produced while the query runs arrive too (real-time mode).
      await produce(name, 1, [pay('d', 4)]);
      await q.processAllAvailable();
      assert.deepEqual(seen(q).at(-1), `${name}-1@1 d 4`);
    } finally {
      await q.stop();
    }
  });

  it('reads every topic a topicPattern matches, partitions sorted by topic', async () => {
    await cluster.createTopic('pattern-b', 1);
    await cluster.createTopic('pattern-a', 2);
    await cluster.createTopic('other-pattern', 1);
    await produce('pattern-b', 0, [pay('b', 1)]);
    await produce('pattern-a', 1, [pay('a', 2)]);
    await produce('other-pattern', 0, [pay('x', 3)]);
    const q = await start({ topicPattern: '^pattern-' });
    try {
      await q.processAllAvailable();
      assert.deepEqual(seen(q), ['pattern-a-1@0 a 2', 'pattern-b-0@0 b 1']);
      // Three source partitions: pattern-a 0 and 1, then pattern-b 0.
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.equal(p.sources[0]!.description, 'KafkaSource[/^pattern-/]');
      assert.deepEqual(p.sources[0]!.endOffset, { 0: 0, 1: 1, 2: 1 });
    } finally {
      await q.stop();
    }
  });

  it('reads what kcat, an independent client, produced', async () => {
    const name = await topic(1);
    await kcatProduce(cluster.bootstrap, name, [
      { key: 'k1', value: JSON.stringify(pay('k1', 10)), partition: 0 },
      { key: 'k2', value: JSON.stringify(pay('k2', 20)), partition: 0 },
    ]);
    const q = await start({ topic: name });
    try {
      await q.processAllAvailable();
      assert.deepEqual(seen(q), [`${name}-0@0 k1 10`, `${name}-0@1 k2 20`]);
    } finally {
      await q.stop();
    }
  });

  it('starts at the latest offsets, or at the offsets startingOffsets gives per partition', async () => {
    const name = await topic(2);
    await produce(name, 0, [pay('a', 1), pay('b', 2), pay('c', 3)]);
    await produce(name, 1, [pay('d', 4)]);
    const latest = await start({ topic: name, start: 'latest' });
    try {
      await latest.processAllAvailable();
      assert.deepEqual(seen(latest), []);
      await produce(name, 1, [pay('e', 5)]);
      await latest.processAllAvailable();
      assert.deepEqual(seen(latest), [`${name}-1@1 e 5`]);
    } finally {
      await latest.stop();
    }
    const given = await start({ topic: name, start: JSON.stringify({ [name]: { 0: 2, 1: -2 } }) });
    try {
      await given.processAllAvailable();
      assert.deepEqual(seen(given), [`${name}-0@2 c 3`, `${name}-1@0 d 4`, `${name}-1@1 e 5`]);
    } finally {
      await given.stop();
    }
  });

  it('resumes from the offsets in its checkpoint', async () => {
    const name = await topic(2);
    const checkpoint = tempDir();
    await produce(name, 0, [pay('a', 1)]);
    await produce(name, 1, [pay('b', 2)]);
    const first = await start({ topic: name, start: 'earliest' }, checkpoint);
    await first.processAllAvailable();
    await first.stop();
    assert.deepEqual(seen(first), [`${name}-0@0 a 1`, `${name}-1@0 b 2`]);
    await produce(name, 0, [pay('c', 3)]);
    const second = await start({ topic: name, start: 'earliest' }, checkpoint);
    try {
      await second.processAllAvailable();
      assert.deepEqual(seen(second), [`${name}-0@1 c 3`]);
    } finally {
      await second.stop();
    }
  });

  it('a first run that stopped before any commit starts again where it first started', async () => {
    const name = await topic(1);
    const checkpoint = tempDir();
    await produce(name, 0, [pay('old', 1)]);
    // `latest` is resolved once and recorded: the rows after it are read by the next run too.
    const first = await start({ topic: name, start: 'latest' }, checkpoint);
    await first.stop();
    await produce(name, 0, [pay('new', 2)]);
    const second = await start({ topic: name, start: 'latest' }, checkpoint);
    try {
      await second.processAllAvailable();
      assert.deepEqual(seen(second), [`${name}-0@1 new 2`]);
    } finally {
      await second.stop();
    }
  });

  it('micro-batch mode takes at most maxOffsetsPerTrigger offsets per batch', async () => {
    const name = await topic(2);
    await produce(
      name,
      0,
      [1, 2, 3, 4, 5, 6].map((i) => pay(`a${i}`, i)),
    );
    await produce(
      name,
      1,
      [7, 8].map((i) => pay(`b${i}`, i)),
    );
    const q = await start({ topic: name, trigger: 'microBatch', maxOffsets: '3' });
    try {
      await q.processAllAvailable();
      const sizes = q
        .sink('out')
        .epochs()
        .map((e) => e.rows.length);
      assert.deepEqual(sizes, [3, 3, 2]);
      assert.equal(seen(q).length, 8);
    } finally {
      await q.stop();
    }
  });

  it('an undecodable record fails the query with its topic, partition and offset', async () => {
    const name = await topic(1);
    await producer.send({
      topic: name,
      messages: [{ value: JSON.stringify(pay('a', 1)) }, { value: '{not json' }],
    });
    const q = await start({ topic: name });
    await assert.rejects(q.awaitTermination(), (e: MillraceError) => {
      assert.equal(e.code, 'TASK_FAILED');
      assert.match(e.message, new RegExp(`${name}-0 offset 1`));
      assert.equal(e.sourceOffset?.offset, 1);
      return true;
    });
  });

  it('under onBadRecord skip, undecodable records are counted and the rest go on', async () => {
    const name = await topic(1);
    await producer.send({
      topic: name,
      messages: [{ value: '{bad' }, { value: JSON.stringify(pay('a', 1)) }, { value: 'also bad' }],
    });
    const q = await startQuery(job, {
      params: { brokers: cluster.bootstrap, topic: name },
      clock: 'manual',
      options: { onBadRecord: 'skip' },
    });
    try {
      await q.processAllAvailable();
      assert.deepEqual(seen(q), [`${name}-0@1 null 1`]);
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.deepEqual(p.badRecords, { skipped: 2, deadLettered: 0 });
      assert.deepEqual(p.sources[0]!.endOffset, { 0: 3 });
    } finally {
      await q.stop();
    }
  });

  it('under onBadRecord deadLetter, undecodable records go to the dead-letter topic, as they were', async () => {
    const name = await topic(1);
    const dlq = await topic(1);
    await producer.send({
      topic: name,
      messages: [{ key: 'x', value: 'not json' }, { value: JSON.stringify(pay('a', 1)) }],
    });
    const q = await startQuery(job, {
      params: { brokers: cluster.bootstrap, topic: name, deadLetterTopic: dlq },
      clock: 'manual',
      options: { onBadRecord: 'deadLetter' },
    });
    try {
      await q.processAllAvailable();
      assert.deepEqual(seen(q), [`${name}-0@1 null 1`]);
      assert.equal(q.deadLetters().length, 1);
    } finally {
      await q.stop();
    }
    const letters = await kcatConsume(cluster.bootstrap, dlq, {});
    assert.equal(letters.length, 1);
    assert.equal(letters[0]!.key, 'x');
    assert.equal(letters[0]!.value, 'not json');
    const headers = new Map(letters[0]!.headers);
    assert.equal(headers.get('millrace.source'), `${name}-0@0`);
    assert.match(headers.get('millrace.error') ?? '', /cannot decode the value/);
  });

  it('a topic that does not exist fails the start with SOURCE_READ_FAILED', async () => {
    await assert.rejects(start({ topic: 'no-such-topic' }), (e: MillraceError) => {
      assert.equal(e.code, 'SOURCE_READ_FAILED');
      assert.match(e.message, /'no-such-topic' not found/);
      return true;
    });
  });

  it('keeps reading across a broker outage: nothing is lost, nothing is read twice', async () => {
    const name = await topic(1);
    await produce(name, 0, [pay('a', 1)]);
    const q = await start({ topic: name });
    try {
      await q.processAllAvailable();
      await cluster.setBrokerDown(1);
      const during = produce(name, 0, [pay('b', 2)]);
      await cluster.setBrokerUp(1);
      await during;
      await produce(name, 0, [pay('c', 3)]);
      await q.processAllAvailable();
      assert.deepEqual(seen(q), [`${name}-0@0 a 1`, `${name}-0@1 b 2`, `${name}-0@2 c 3`]);
    } finally {
      await q.stop();
    }
  });
});

describe('sources.kafka when partition leadership moves (mock cluster of 3 brokers)', {
  skip: peersMissing,
}, () => {
  let cluster: MockCluster;
  let producer: Producer;

  before(async () => {
    cluster = await startMockCluster({
      brokers: 3,
      topics: READERS.map((_, i) => ({ name: `moving-${i}`, partitions: 2 })),
    });
    const kafka = new Kafka({
      brokers: cluster.brokers,
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 50, retries: 20 },
    });
    producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await cluster?.close();
  });

  // One partition per leader: the mock answers ListOffsets v4 and later (which @platformatic/kafka
  // sends) for the first partition of a request only; the test broker's runs cover several.
  READERS.forEach(({ library, skip }, i) => {
    const on = library === 'kafkajs' ? '' : ` (read with ${library})`;
    const moving = `moving-${i}`;
    it(`follows a partition to its new leader: nothing lost, nothing read twice${on}`, { skip }, async () => {
      const send = (partition: number, payments: Payment[]) =>
        producer.send({
          topic: moving,
          messages: payments.map((p) => ({ value: JSON.stringify(p), partition })),
        });
      await cluster.setLeader(moving, 0, 1);
      await cluster.setLeader(moving, 1, 2);
      await send(0, [pay('a', 1)]);
      await send(1, [pay('b', 2)]);
      const q = await startQuery(job, {
        params: { brokers: cluster.bootstrap, topic: moving, library },
        clock: 'manual',
      });
      try {
        await q.processAllAvailable();
        // Partition 0 moves to broker 3: the source's fetches to broker 1 fail, it refreshes
        // metadata and fetches from broker 3, from where it stood.
        await cluster.setLeader(moving, 0, 3);
        await send(0, [pay('c', 3)]);
        await send(1, [pay('d', 4)]);
        await q.processAllAvailable();
        assert.deepEqual(seen(q), [
          `${moving}-0@0 null 1`,
          `${moving}-0@1 null 3`,
          `${moving}-1@0 null 2`,
          `${moving}-1@1 null 4`,
        ]);
      } finally {
        await q.stop();
      }
    });
  });
});
