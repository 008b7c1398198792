import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { KCAT, LIBRDKAFKA_MOCK, missing } from '../peers.js';
import { within } from './kafkajs-helpers.js';
import { kcatConsume, kcatProduce } from './kcat.js';
import { type MockCluster, startMockCluster } from './mock-cluster.js';

const peersMissing = missing(LIBRDKAFKA_MOCK, KCAT);

/** Kafka API key and error codes used below (see the Kafka protocol guide). */
const PRODUCE_API = 0;
const NOT_LEADER_OR_FOLLOWER = 6;
const INVALID_RECORD = 87;

/**
 * A kafkajs client for the mock. Producers must stay non-idempotent: the mock reports controller id 0,
 * which is no broker, and kafkajs asks the controller for a producer id.
 */
function client(cluster: MockCluster): Kafka {
  return new Kafka({
    brokers: cluster.brokers,
    logLevel: logLevel.NOTHING,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 10 },
  });
}

describe('librdkafka mock cluster', { skip: peersMissing }, () => {
  let cluster: MockCluster;
  let kafka: Kafka;
  let producer: Producer;

  before(async () => {
    cluster = await startMockCluster({
      brokers: 3,
      topics: [
        { name: 'to-kcat', partitions: 3 },
        { name: 'from-kcat', partitions: 2 },
        { name: 'outage', partitions: 1 },
        { name: 'errors', partitions: 1 },
      ],
    });
    kafka = client(cluster);
    producer = kafka.producer({ idempotent: false });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await cluster?.close();
  });

  it('listens on loopback, one address per broker', () => {
    assert.equal(cluster.brokers.length, 3);
    for (const b of cluster.brokers) assert.match(b, /^127\.0\.0\.1:\d+$/);
    assert.equal(cluster.bootstrap, cluster.brokers.join(','));
  });

  it("serves a kafkajs producer's records to kcat with their partitions, keys, values and headers", async () => {
    await producer.send({
      topic: 'to-kcat',
      messages: [
        { partition: 0, key: 'a', value: 'one', headers: { source: 'kafkajs' } },
        { partition: 2, key: 'b', value: 'two' },
        { partition: 0, key: null, value: 'three' },
      ],
    });
    const got = await kcatConsume(cluster.bootstrap, 'to-kcat');
    const view = got
      .map((m) => ({
        partition: m.partition,
        offset: m.offset,
        key: m.key,
        value: m.value,
        headers: m.headers,
      }))
      .sort((x, y) => x.partition - y.partition || x.offset - y.offset);
    assert.deepEqual(view, [
      { partition: 0, offset: 0, key: 'a', value: 'one', headers: [['source', 'kafkajs']] },
      { partition: 0, offset: 1, key: null, value: 'three', headers: undefined },
      { partition: 2, offset: 0, key: 'b', value: 'two', headers: undefined },
    ]);
    for (const m of got)
      assert.ok(Math.abs(m.timestamp - Date.now()) < 60_000, 'timestamps are wall-clock ms');

    const fromOffsetOne = await kcatConsume(cluster.bootstrap, 'to-kcat', { partition: 0, from: 1 });
    assert.deepEqual(
      fromOffsetOne.map((m) => m.value),
      ['three'],
    );
  });

  it('serves records kcat produced to a kafkajs consumer group reading from the beginning', async () => {
    await kcatProduce(cluster.bootstrap, 'from-kcat', [
      { partition: 0, key: 'k1', value: 'v1' },
      { partition: 0, value: 'no key' },
      { partition: 1, key: '', value: 'empty key', headers: { h: 'x' } },
    ]);
    const consumer = kafka.consumer({ groupId: 'mock-cluster-test', maxWaitTimeInMs: 100 });
    const seen: { partition: number; offset: string; key: string | null; value: string; h?: string }[] = [];
    let allSeen!: () => void;
    const three = new Promise<void>((resolve) => {
      allSeen = resolve;
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: 'from-kcat', fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          seen.push({
            partition,
            offset: message.offset,
            key: message.key === null ? null : message.key.toString(),
            value: message.value!.toString(),
            ...(message.headers?.h ? { h: message.headers.h.toString() } : {}),
          });
          if (seen.length === 3) allSeen();
        },
      });
      await within(30_000, 'the consumer to receive the 3 records', three);
    } finally {
      await consumer.disconnect();
    }
    seen.sort((x, y) => x.partition - y.partition || Number(x.offset) - Number(y.offset));
    assert.deepEqual(seen, [
      { partition: 0, offset: '0', key: 'k1', value: 'v1' },
      { partition: 0, offset: '1', key: null, value: 'no key' },
      { partition: 1, offset: '0', key: '', value: 'empty key', h: 'x' },
    ]);
  });

  it('creates topics at runtime, and refuses an existing name', async () => {
    await cluster.createTopic('made-later', 5);
    const admin = kafka.admin();
    try {
      await admin.connect();
      const { topics } = await admin.fetchTopicMetadata({ topics: ['made-later'] });
      assert.equal(topics[0]!.partitions.length, 5);
    } finally {
      await admin.disconnect();
    }
    await kcatProduce(cluster.bootstrap, 'made-later', [{ partition: 4, value: 'last partition' }]);
    assert.deepEqual(
      (await kcatConsume(cluster.bootstrap, 'made-later')).map((m) => [m.partition, m.value]),
      [[4, 'last partition']],
    );
    await assert.rejects(cluster.createTopic('made-later', 1), /TOPIC_ALREADY_EXISTS/);
  });

  it("delivers a retrying producer's send made while the leader is down, once it is back, in order", async () => {
    await cluster.setLeader('outage', 0, 2);
    await producer.send({ topic: 'outage', messages: [{ value: 'before' }] });
    await cluster.setBrokerDown(2);
    const during = producer.send({ topic: 'outage', messages: [{ value: 'during' }] });
    // The send is under way (kafkajs retries it) while the leader is down; it lands once it is back.
    await cluster.setBrokerUp(2);
    await during;
    await producer.send({ topic: 'outage', messages: [{ value: 'after' }] });
    const got = await kcatConsume(cluster.bootstrap, 'outage');
    assert.deepEqual(
      got.map((m) => [m.offset, m.value]),
      [
        [0, 'before'],
        [1, 'during'],
        [2, 'after'],
      ],
    );
  });

  it('fails requests on demand: retriable errors are retried, others reach the caller', async () => {
    await cluster.pushRequestErrors(PRODUCE_API, 2, NOT_LEADER_OR_FOLLOWER);
    await producer.send({ topic: 'errors', messages: [{ value: 'retried' }] });
    await cluster.pushRequestErrors(PRODUCE_API, 1, INVALID_RECORD);
    await assert.rejects(
      producer.send({ topic: 'errors', messages: [{ value: 'rejected' }] }),
      /failed the validation/,
    );
    assert.deepEqual(
      (await kcatConsume(cluster.bootstrap, 'errors')).map((m) => m.value),
      ['retried'],
    );
  });

  it('answers a bad command with its reason and stays usable', async () => {
    await assert.rejects(cluster.setBrokerDown(9), /no such broker: 9/);
    await cluster.setRtt(-1, 0);
  });
});

describe('mock cluster launcher', { skip: missing(LIBRDKAFKA_MOCK) }, () => {
  it('rejects a bad topic before starting anything', async () => {
    await assert.rejects(startMockCluster({ topics: [{ name: 'a b', partitions: 1 }] }), /bad topic name/);
    await assert.rejects(startMockCluster({ topics: [{ name: 'a', partitions: 0 }] }), /bad partition count/);
  });

  it('reports why the launcher exited before listening', async () => {
    await assert.rejects(
      startMockCluster({ brokers: 99, topics: [] }),
      /exited with code 2 before the BOOTSTRAP line; its stderr:\nusage:/,
    );
  });

  it('closes on request, twice without harm', async () => {
    const c = await startMockCluster({ topics: [] });
    await c.close();
    await c.close();
    await assert.rejects(c.createTopic('late', 1), /exited with code 0/);
  });
});
