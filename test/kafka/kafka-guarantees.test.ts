import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Producer } from 'kafkajs';
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
import { KCAT, missing } from '../peers.js';
import { TestBroker } from './broker/index.js';
import { kafkaClient } from './kafkajs-helpers.js';
import { kcatConsume } from './kcat.js';

const job = new URL('../fixtures/jobs/kafka.js', import.meta.url);
const tempDir = tempDirs('millrace-kafka-guarantees');

const pay = (card: string, amount: number, ts = 0): Payment => ({ card, amount, ts });

/** The client libraries a Kafka source reads with, each skipped with the reason where it cannot run. */
const READERS = [
  { library: 'kafkajs', skip: false },
  { library: '@platformatic/kafka', skip: platformaticUnsupported() ?? false },
] as const;

/**
 * The next epoch `q` commits, as `once` gives it; rejects with the query's error as soon as it
 * fails instead (a failed query commits nothing more, and the wait would last the test's timeout).
 */
/** Ends the real-time epoch (1 s of manual clock) and resolves once it is committed. */
function commitEpoch(q: StreamingQuery): Promise<unknown[]> {
  const committed = nextCommit(q);
  q.clock.advance(1000);
  return committed;
}

function nextCommit(q: StreamingQuery): Promise<unknown[]> {
  return Promise.race([
    once(q, 'epochCommitted'),
    q.awaitTermination().then(() => {
      throw new Error('the query ended before it committed an epoch');
    }),
  ]);
}

/**
 * The sink's and the source's guarantees against the project's Kafka-protocol test broker, which
 * implements idempotent producing, transactions with read_committed fetching, consumer groups,
 * DeleteRecords, and fault injection (lost acknowledgements, dropped connections, restarts).
 */
describe('Kafka source and sink guarantees (test broker)', () => {
  let broker: TestBroker;
  /** A second broker the lost-acknowledgement tests write to, so that only the sink's acks are lost. */
  let outBroker: TestBroker;
  let producer: Producer;
  let topics = 0;

  function topic(partitions: number): string {
    const name = `g-${topics++}`;
    broker.createTopic(name, partitions);
    return name;
  }

  async function produce(name: string, payments: Payment[], partition = 0): Promise<void> {
    await producer.send({
      topic: name,
      messages: payments.map((p) => ({ key: p.card, value: JSON.stringify(p), partition })),
    });
  }

  /** Values of a topic as a read_committed (or read_uncommitted) reader sees them, per partition in offset order. */
  async function values(
    name: string,
    partitions: number,
    isolation: 'read_committed' | 'read_uncommitted' = 'read_committed',
  ): Promise<string[]> {
    const out: string[] = [];
    for (let p = 0; p < partitions; p++) {
      for (const r of await broker.records(name, p, { isolation })) out.push(r.value!.toString());
    }
    return out;
  }

  function start(params: Record<string, string>, checkpoint?: string): Promise<StreamingQuery> {
    return startQuery(job, {
      params: { brokers: broker.bootstrap, ...params },
      clock: 'manual',
      checkpointLocation: checkpoint,
    });
  }

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
    outBroker = await TestBroker.start({ autoCreateTopics: false });
    producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await broker?.close();
    await outBroker?.close();
  });

  it('exactly-once: each epoch is one transaction; a read_committed reader sees every row once', async () => {
    const input = topic(2);
    const output = topic(2);
    const payments = [pay('a', 1), pay('b', 2), pay('c', 3)];
    await produce(input, payments.slice(0, 2), 0);
    await produce(input, payments.slice(2), 1);
    const checkpoint = tempDir();
    const q = await start({ topic: input, outTopic: output, case: 'copy', exactlyOnce: 'true' }, checkpoint);
    try {
      await q.processAllAvailable();
      // Nothing is visible before the epoch ends: the transaction is still open.
      assert.deepEqual(await values(output, 2), []);
      assert.equal((await values(output, 2, 'read_uncommitted')).length, 3);
      await commitEpoch(q);
      assert.deepEqual((await values(output, 2)).sort(), payments.map((p) => JSON.stringify(p)).sort());
    } finally {
      await q.stop();
    }
    // A second run reads nothing new and writes nothing again.
    const again = await start(
      { topic: input, outTopic: output, case: 'copy', exactlyOnce: 'true' },
      checkpoint,
    );
    await again.processAllAvailable();
    await again.stop();
    assert.equal((await values(output, 2)).length, 3);
  });

  it('exactly-once: a restart after an epoch’s transaction committed, and not its checkpoint, finishes the commit', async () => {
    const input = topic(1);
    const output = topic(1);
    const checkpoint = tempDir();
    await produce(input, [pay('a', 1), pay('b', 2)]);
    const params = {
      topic: input,
      outTopic: output,
      case: 'copy',
      exactlyOnce: 'true',
      transactionalIdPrefix: 'redo',
    };
    const q = await start(params, checkpoint);
    await q.processAllAvailable();
    const committed = nextCommit(q);
    q.clock.advance(1000);
    const [epoch] = (await committed) as [number];
    await q.stop();
    // As if the run had died after the sink's transaction of the epoch committed but before the
    // checkpoint did: the epoch's commit file goes. (The stop committed one more epoch, without
    // rows: it goes too, offsets and all.)
    rmSync(join(checkpoint, 'commits', String(epoch + 1)), { force: true });
    rmSync(join(checkpoint, 'offsets', String(epoch + 1)), { force: true });
    rmSync(join(checkpoint, 'commits', String(epoch)), { force: true });
    const next = await start(params, checkpoint);
    // Every sink partition recorded the epoch in its transaction: the restart writes its commit
    // file as it opens the checkpoint (a redo would write it only once a second of the manual
    // clock ended the redone epoch) and goes on after it.
    assert.ok(existsSync(join(checkpoint, 'commits', String(epoch))));
    await next.processAllAvailable();
    await next.stop();
    assert.deepEqual(await values(output, 1), [JSON.stringify(pay('a', 1)), JSON.stringify(pay('b', 2))]);
  });

  it('at-least-once: a lost produce acknowledgement makes no duplicate with the idempotent producer', async () => {
    const input = topic(1);
    outBroker.createTopic('idempotent', 1);
    await produce(input, [pay('a', 1)]);
    const q = await start({
      topic: input,
      outBrokers: outBroker.bootstrap,
      outTopic: 'idempotent',
      case: 'copy',
    });
    try {
      await q.processAllAvailable();
      outBroker.loseNextProduceAck();
      await produce(input, [pay('b', 2)]);
      await q.processAllAvailable();
      await produce(input, [pay('c', 3)]);
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    const written = (await outBroker.records('idempotent', 0, { isolation: 'read_committed' })).map((r) =>
      r.value!.toString(),
    );
    assert.deepEqual(
      written,
      ['a', 'b', 'c'].map((c, i) => JSON.stringify(pay(c, i + 1))),
    );
  });

  it('at-least-once without idempotence: a lost acknowledgement writes that send again (documented)', async () => {
    const input = topic(1);
    outBroker.createTopic('plain', 1);
    await produce(input, [pay('a', 1)]);
    const q = await start({
      topic: input,
      outBrokers: outBroker.bootstrap,
      outTopic: 'plain',
      case: 'copy',
      idempotent: 'false',
    });
    try {
      await q.processAllAvailable();
      outBroker.loseNextProduceAck();
      await produce(input, [pay('b', 2)]);
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    const a = JSON.stringify(pay('a', 1));
    const b = JSON.stringify(pay('b', 2));
    const written = (await outBroker.records('plain', 0, { isolation: 'read_committed' })).map((r) =>
      r.value!.toString(),
    );
    assert.deepEqual(written, [a, b, b]);
  });

  // The source's reading, with each client library it can read with.
  for (const { library, skip } of READERS) {
    const on = library === 'kafkajs' ? '' : ` (read with ${library})`;
    const read = (params: Record<string, string>, checkpoint?: string) =>
      start({ ...params, library }, checkpoint);

    it(`reads only committed transactions under read_committed, everything under read_uncommitted${on}`, {
      skip,
    }, async () => {
      const input = topic(1);
      const txProducer = kafkaClient(broker.bootstrap).producer({
        transactionalId: `tx-${input}`,
        maxInFlightRequests: 1,
      });
      await txProducer.connect();
      try {
        const aborted = await txProducer.transaction();
        await aborted.send({ topic: input, messages: [{ value: JSON.stringify(pay('aborted', 1)) }] });
        await aborted.abort();
        const kept = await txProducer.transaction();
        await kept.send({ topic: input, messages: [{ value: JSON.stringify(pay('kept', 2)) }] });
        await kept.commit();
      } finally {
        await txProducer.disconnect();
      }
      for (const isolation of ['read_committed', 'read_uncommitted']) {
        const q = await read({ topic: input, isolation });
        await q.processAllAvailable();
        await q.stop();
        const cards = (q.sink('out').rows() as KafkaRow<Payment>[]).map((r) => r.value.card);
        assert.deepEqual(cards, isolation === 'read_committed' ? ['kept'] : ['aborted', 'kept']);
      }
    });

    it(`offsets deleted before a restart fail it under failOnDataLoss, and are skipped and counted without${on}`, {
      skip,
    }, async () => {
      const input = topic(1);
      const checkpoint = tempDir();
      await produce(input, [pay('a', 1)]);
      const first = await read({ topic: input }, checkpoint);
      await first.processAllAvailable();
      await first.stop();
      await produce(input, [pay('b', 2), pay('c', 3), pay('d', 4)]);
      broker.deleteRecordsBefore(input, 0, 3);
      const strict = await read({ topic: input }, checkpoint);
      await assert.rejects(strict.awaitTermination(), (e: MillraceError) => {
        assert.equal(e.code, 'SOURCE_DATA_LOST');
        assert.match(e.message, new RegExp(`${input}-0 offsets 1 to 2 no longer exist`));
        return true;
      });
      const lenient = await read({ topic: input, failOnDataLoss: 'false' }, checkpoint);
      try {
        await lenient.processAllAvailable();
        assert.deepEqual(
          (lenient.sink('out').rows() as KafkaRow<Payment>[]).map((r) => `${r.offset} ${r.value.card}`),
          ['3 d'],
        );
        const progress = once(lenient, 'progress');
        lenient.clock.advance(1000);
        const [p] = (await progress) as [StreamingQueryProgress];
        assert.equal(p.sources[0]!.metrics?.offsetsLost, 2);
      } finally {
        await lenient.stop();
      }
    });

    it(`a topic deleted while the query runs fails it under failOnDataLoss${on}`, { skip }, async () => {
      const input = topic(1);
      // Its own producer: a kafkajs client that wrote to a deleted topic keeps asking for it.
      const own = kafkaClient(broker.bootstrap).producer();
      await own.connect();
      await own.send({ topic: input, messages: [{ value: JSON.stringify(pay('a', 1)) }] });
      await own.disconnect();
      const q = await read({ topic: input });
      await q.processAllAvailable();
      broker.deleteTopic(input);
      await assert.rejects(q.awaitTermination(), (e: MillraceError) => {
        assert.equal(e.code, 'SOURCE_DATA_LOST');
        assert.match(e.message, new RegExp(`${input}-0 no longer exists`));
        return true;
      });
    });

    it(`without failOnDataLoss, a deleted topic is dropped and counted, and the other topics go on${on}`, {
      skip,
    }, async () => {
      const kept = topic(1);
      const doomed = `${kept}-doomed`;
      broker.createTopic(doomed, 1);
      // Its own producer: a kafkajs client that wrote to a deleted topic keeps asking for it.
      const own = kafkaClient(broker.bootstrap).producer();
      await own.connect();
      await own.send({ topic: doomed, messages: [{ value: JSON.stringify(pay('doomed', 1)) }] });
      await own.disconnect();
      await produce(kept, [pay('kept', 2)]);
      const q = await read({ topicPattern: `^${kept}`, failOnDataLoss: 'false' });
      try {
        await q.processAllAvailable();
        broker.deleteTopic(doomed);
        await produce(kept, [pay('after', 3)]);
        await q.processAllAvailable();
        const cards = (q.sink('out').rows() as KafkaRow<Payment>[]).map((r) => r.value.card).sort();
        assert.deepEqual(cards, ['after', 'doomed', 'kept']);
        const progress = once(q, 'progress');
        q.clock.advance(1000);
        const [p] = (await progress) as [StreamingQueryProgress];
        assert.equal(p.sources[0]!.metrics?.partitionsLost, 1);
      } finally {
        await q.stop();
      }
    });

    it(`commits its offsets to groupId for monitoring, and resumes from its checkpoint whatever the group says${on}`, {
      skip,
    }, async () => {
      const input = topic(2);
      const checkpoint = tempDir();
      await produce(input, [pay('a', 1), pay('b', 2)], 0);
      await produce(input, [pay('c', 3)], 1);
      // A committed epoch's offsets go to the group; stop() resolves once its own epoch's have.
      const first = await read({ topic: input, groupId: 'monitor' }, checkpoint);
      await first.processAllAvailable();
      await first.stop();
      assert.equal(broker.committedOffset('monitor', input, 0), 2);
      assert.equal(broker.committedOffset('monitor', input, 1), 1);
      const admin = kafkaClient(broker.bootstrap).admin();
      await admin.connect();
      await admin.setOffsets({
        groupId: 'monitor',
        topic: input,
        partitions: [{ partition: 0, offset: '0' }],
      });
      await admin.disconnect();
      await produce(input, [pay('d', 4)], 0);
      const second = await read({ topic: input, groupId: 'monitor' }, checkpoint);
      try {
        await second.processAllAvailable();
        assert.deepEqual(
          (second.sink('out').rows() as KafkaRow<Payment>[]).map((r) => r.value.card),
          ['d'],
        );
      } finally {
        await second.stop();
      }
    });

    it(`a broker restart mid-stream loses nothing and writes nothing twice (source and sink)${on}`, {
      skip,
    }, async () => {
      const input = topic(1);
      const output = topic(1);
      await produce(input, [pay('a', 1)]);
      const q = await read({ topic: input, outTopic: output, case: 'copy' });
      try {
        await q.processAllAvailable();
        await broker.stop();
        await broker.start();
        await produce(input, [pay('b', 2)]);
        broker.dropConnections();
        await produce(input, [pay('c', 3)]);
        await q.processAllAvailable();
      } finally {
        await q.stop();
      }
      assert.deepEqual(
        await values(output, 1),
        ['a', 'b', 'c'].map((c, i) => JSON.stringify(pay(c, i + 1))),
      );
    });
  }

  it('exactly-once: dropped connections mid-epoch are retried inside the transaction, each row once', async () => {
    const input = topic(1);
    const output = topic(1);
    await produce(input, [pay('a', 1)]);
    const q = await start({ topic: input, outTopic: output, case: 'copy', exactlyOnce: 'true' });
    try {
      await q.processAllAvailable();
      broker.dropConnections();
      await produce(input, [pay('b', 2)]);
      await q.processAllAvailable();
      broker.dropConnections();
      await commitEpoch(q);
    } finally {
      await q.stop();
    }
    assert.deepEqual(await values(output, 1), [JSON.stringify(pay('a', 1)), JSON.stringify(pay('b', 2))]);
  });

  it('exactly-once: a transaction coordinator lookup lost as an epoch commits is retried, each row once', async () => {
    const input = topic(1);
    const output = topic(1);
    await produce(input, [pay('a', 1)]);
    const q = await start({ topic: input, outTopic: output, case: 'copy', exactlyOnce: 'true' });
    try {
      await q.processAllAvailable();
      // The row is in the open transaction: the next lookups are the commit's.
      await broker.appended(output, 0, 1);
      broker.dropNextTxnCoordinatorLookup(2);
      await commitEpoch(q);
      await produce(input, [pay('b', 2)]);
      await q.processAllAvailable();
      await commitEpoch(q);
    } finally {
      await q.stop();
    }
    assert.deepEqual(await values(output, 1), [JSON.stringify(pay('a', 1)), JSON.stringify(pay('b', 2))]);
  });

  it('kcat, reading read_committed, sees an exactly-once sink’s rows once', {
    skip: missing(KCAT),
  }, async () => {
    const input = topic(1);
    const output = topic(1);
    await produce(input, [pay('a', 1), pay('b', 2)]);
    const q = await start({ topic: input, outTopic: output, case: 'copy', exactlyOnce: 'true' });
    await q.processAllAvailable();
    await q.stop();
    const read = await kcatConsume(broker.bootstrap, output, { isolation: 'read_committed' });
    assert.deepEqual(
      read.map((m) => `${m.key} ${m.value}`),
      [`a ${JSON.stringify(pay('a', 1))}`, `b ${JSON.stringify(pay('b', 2))}`],
    );
  });
});
