import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Kafka, Producer } from 'kafkajs';
import { TestBroker } from './broker/index.js';
import { consumeUntil, kafkaClient, within } from './kafkajs-helpers.js';

const values = async (broker: TestBroker, topic: string, isolation?: 'read_committed') =>
  (await broker.records(topic, 0, { isolation: isolation ?? 'read_uncommitted' })).map((r) =>
    r.value?.toString(),
  );

const messages = (...vs: string[]) => vs.map((value) => ({ key: value, value }));

describe('TestBroker (Kafka protocol, driven by kafkajs)', () => {
  let broker: TestBroker;
  let kafka: Kafka;
  const producers: Producer[] = [];
  const producer = async (config: Parameters<Kafka['producer']>[0] = {}) => {
    const p = kafka.producer(config);
    producers.push(p);
    await p.connect();
    return p;
  };

  before(async () => {
    broker = await TestBroker.start();
    kafka = kafkaClient(broker.bootstrap);
  });

  after(async () => {
    for (const p of producers) await p.disconnect().catch(() => {});
    await broker.close();
  });

  it('serves a plain producer’s messages to a consumer group and to broker.records', async () => {
    const p = await producer();
    await p.send({ topic: 'plain', messages: messages('a', 'b', 'c') });
    assert.deepEqual(await consumeUntil(kafka, { groupId: 'plain-g', topic: 'plain', untilValue: 'c' }), [
      'a',
      'b',
      'c',
    ]);
    const stored = await broker.records('plain', 0);
    assert.deepEqual(
      stored.map((r) => [r.offset, r.key?.toString(), r.value?.toString()]),
      [
        [0, 'a', 'a'],
        [1, 'b', 'b'],
        [2, 'c', 'c'],
      ],
    );
    assert.equal(broker.highWatermark('plain', 0), 3);
    const admin = kafka.admin();
    await admin.connect();
    const [committed] = await admin.fetchOffsets({ groupId: 'plain-g', topics: ['plain'] });
    assert.equal(committed!.partitions[0]!.offset, '3');
    await admin.disconnect();
  });

  it('keeps one copy of an idempotent producer’s batch whose ack was lost, and two of a plain one', async () => {
    broker.createTopic('lost-ack-idempotent');
    broker.createTopic('lost-ack-plain');
    const idempotent = await producer({ idempotent: true, maxInFlightRequests: 1 });
    await idempotent.send({ topic: 'lost-ack-idempotent', messages: messages('warm-up') });
    broker.loseNextProduceAck();
    await idempotent.send({ topic: 'lost-ack-idempotent', messages: messages('once') });
    assert.deepEqual(await values(broker, 'lost-ack-idempotent'), ['warm-up', 'once']);

    const plain = await producer();
    broker.loseNextProduceAck();
    await plain.send({ topic: 'lost-ack-plain', messages: messages('twice') });
    assert.deepEqual(await values(broker, 'lost-ack-plain'), ['twice', 'twice']);
  });

  it('shows committed transactions to read_committed consumers and aborted ones only to read_uncommitted', async () => {
    broker.createTopic('txn');
    const p = await producer({ transactionalId: 'txn-visibility', idempotent: true, maxInFlightRequests: 1 });
    const aborted = await p.transaction();
    await aborted.send({ topic: 'txn', messages: messages('a1', 'a2') });
    await aborted.abort();
    const committed = await p.transaction();
    await committed.send({ topic: 'txn', messages: messages('c1', 'c2') });
    await committed.commit();

    assert.deepEqual(await consumeUntil(kafka, { groupId: 'txn-rc', topic: 'txn', untilValue: 'c2' }), [
      'c1',
      'c2',
    ]);
    assert.deepEqual(
      await consumeUntil(kafka, { groupId: 'txn-ru', topic: 'txn', untilValue: 'c2', readUncommitted: true }),
      ['a1', 'a2', 'c1', 'c2'],
    );
    assert.deepEqual(await values(broker, 'txn', 'read_committed'), ['c1', 'c2']);
    // two data batches and two control batches (ABORT, COMMIT)
    assert.equal(broker.highWatermark('txn', 0), 6);
    assert.equal(broker.lastStableOffset('txn', 0), 6);
  });

  it('publishes offsets sent in a transaction only when the transaction commits', async () => {
    broker.createTopic('txn-offsets');
    const p = await producer({ transactionalId: 'txn-offsets', idempotent: true, maxInFlightRequests: 1 });
    const sendOffsets = async (offset: string, end: 'commit' | 'abort') => {
      const txn = await p.transaction();
      await txn.send({ topic: 'txn-offsets', messages: messages(offset) });
      await txn.sendOffsets({
        consumerGroupId: 'txn-offsets-g',
        topics: [{ topic: 'txn-offsets', partitions: [{ partition: 0, offset }] }],
      });
      await txn[end]();
    };
    const admin = kafka.admin();
    await admin.connect();
    const fetched = async () =>
      (await admin.fetchOffsets({ groupId: 'txn-offsets-g', topics: ['txn-offsets'] }))[0]!.partitions[0]!
        .offset;

    await sendOffsets('5', 'commit');
    assert.equal(await fetched(), '5');
    await sendOffsets('9', 'abort');
    assert.equal(await fetched(), '5');
    await admin.disconnect();
  });

  it('fences a transactional producer when another starts with its id, aborting its open transaction', async () => {
    broker.createTopic('fenced');
    const config = { transactionalId: 'fenced-id', idempotent: true, maxInFlightRequests: 1 };
    const first = await producer(config);
    const open = await first.transaction();
    await open.send({ topic: 'fenced', messages: messages('zombie') });
    assert.equal(broker.lastStableOffset('fenced', 0), 0, 'the open transaction holds back the LSO');

    const second = await producer(config);
    const txn = await second.transaction(); // kafkajs initialises the transactional id here
    assert.equal(
      broker.lastStableOffset('fenced', 0),
      broker.highWatermark('fenced', 0),
      'aborted on fencing',
    );
    await assert.rejects(open.commit(), /epoch/i);

    await txn.send({ topic: 'fenced', messages: messages('successor') });
    await txn.commit();
    assert.deepEqual(await values(broker, 'fenced', 'read_committed'), ['successor']);
    assert.deepEqual(await values(broker, 'fenced'), ['zombie', 'successor']);
  });

  it('answers a long-polling fetch as soon as data is produced', async () => {
    broker.createTopic('long-poll');
    const p = await producer();
    let fetchesAnswered = 0;
    let longestFetchMs = 0;
    let sentAt = 0;
    const parked = broker.nextParkedFetch().then(async () => {
      fetchesAnswered = 0;
      sentAt = Date.now();
      await p.send({ topic: 'long-poll', messages: messages('now') });
    });
    const received = await consumeUntil(kafka, {
      groupId: 'long-poll-g',
      topic: 'long-poll',
      untilValue: 'now',
      maxWaitTimeInMs: 5000,
      onStart: (consumer) =>
        consumer.on(consumer.events.FETCH, ({ payload }) => {
          fetchesAnswered++;
          longestFetchMs = Math.max(longestFetchMs, payload.duration);
        }),
    });
    const latencyMs = Date.now() - sentAt;
    await parked;
    assert.deepEqual(received, ['now']);
    assert.equal(fetchesAnswered, 1, 'the parked fetch itself carried the message');
    assert.ok(longestFetchMs < 5000 && latencyMs < 2000, `delivered ${latencyMs} ms after producing`);
  });

  it('survives dropped connections, and keeps its data across stop() and start(), refusing connections while stopped', async () => {
    broker.createTopic('restart');
    const p = await producer({ idempotent: true, maxInFlightRequests: 1 });
    await p.send({ topic: 'restart', messages: messages('before') });
    broker.dropConnections();
    await p.send({ topic: 'restart', messages: messages('after-drop') });

    await broker.stop();
    const [host, port] = broker.bootstrap.split(':');
    const refused = await new Promise<string>((resolve) =>
      connect(Number(port), host)
        .on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? ''))
        .on('connect', () => resolve('connected')),
    );
    assert.equal(refused, 'ECONNREFUSED');
    await broker.start();

    await within(
      20_000,
      'producing after the restart',
      p.send({ topic: 'restart', messages: messages('after') }),
    );
    assert.deepEqual(
      await consumeUntil(kafka, { groupId: 'restart-g', topic: 'restart', untilValue: 'after' }),
      ['before', 'after-drop', 'after'],
    );
  });

  it('advances the log start offset with admin.deleteTopicRecords; a group set before it restarts at the start', async () => {
    broker.createTopic('trimmed');
    const p = await producer();
    await p.send({ topic: 'trimmed', messages: messages('0', '1', '2', '3') });
    const admin = kafka.admin();
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: ['trimmed'] }); // kafkajs's deleteTopicRecords needs it loaded
    await admin.deleteTopicRecords({ topic: 'trimmed', partitions: [{ partition: 0, offset: '2' }] });
    assert.equal(broker.logStartOffset('trimmed', 0), 2);
    assert.deepEqual(await values(broker, 'trimmed'), ['2', '3']);
    const [offsets] = await admin.fetchTopicOffsets('trimmed');
    assert.deepEqual([offsets!.low, offsets!.high], ['2', '4']);

    // kafkajs's setOffsets runs a paused consumer, which sleeps its 5 s maxWaitTime before stopping
    await admin.setOffsets({
      groupId: 'trimmed-g',
      topic: 'trimmed',
      partitions: [{ partition: 0, offset: '1' }],
    });
    const [committed] = await admin.fetchOffsets({ groupId: 'trimmed-g', topics: ['trimmed'] });
    assert.equal(committed!.partitions[0]!.offset, '1');
    // offset 1 no longer exists: the fetch is answered OFFSET_OUT_OF_RANGE and the consumer resets to the start
    assert.deepEqual(await consumeUntil(kafka, { groupId: 'trimmed-g', topic: 'trimmed', untilValue: '3' }), [
      '2',
      '3',
    ]);
    await admin.disconnect();
  });
});
