import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { SideOutputs } from '../../src/connectors/side-output/side-outputs.js';
import { type DeadLetter, MillraceError, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { TestBroker } from './broker/index.js';

const failing = new URL('../fixtures/jobs/failing.js', import.meta.url);
const tempDir = tempDirs('millrace-side-outputs-kafka');

/** kafkajs gives up on unreachable brokers after one quick retry. */
const QUICK_RETRIES = { retry: { retries: 1, initialRetryTime: 10, maxRetryTime: 20 } };

const letter: DeadLetter = {
  error: { name: 'RangeError', message: 'unlucky amount in row 1' },
  operator: { id: 1, kind: 'map', name: 'double' },
  stage: 0,
  partition: 0,
  sourceOffset: { source: 0, partition: 0, offset: 0 },
  row: { id: 1, amount: 13 },
  timestamp: 0,
};

/**
 * Dead letters produced to a Kafka topic of the project's test broker (a broker of their own, so
 * that it can go down without the query's source and sink).
 */
describe('dead letters to a Kafka topic (test broker)', () => {
  let broker: TestBroker;
  let topics = 0;

  function topic(): string {
    const name = `dead-letters-${topics++}`;
    broker.createTopic(name, 1);
    return name;
  }

  function start(name: string) {
    return startQuery(failing, {
      clock: 'manual',
      checkpointLocation: tempDir(),
      options: {
        onBadRecord: 'deadLetter',
        deadLetters: { kafka: { brokers: broker.bootstrap, topic: name } },
      },
    });
  }

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
  });

  after(async () => {
    await broker?.close();
  });

  it('writes each one as a record: the row as JSON value, the error and where it happened in headers', async () => {
    const name = topic();
    const q = await start(name);
    let seen: DeadLetter[];
    try {
      q.source('in').addData([
        { id: 1, amount: 13 },
        { id: 2, amount: 4 },
      ]);
      await q.processAllAvailable();
      seen = q.deadLetters();
    } finally {
      await q.stop();
    }
    const records = await broker.records(name, 0);
    assert.equal(records.length, 1);
    const [r] = records;
    assert.deepEqual(JSON.parse(r!.value!.toString()), { id: 1, amount: 13 });
    assert.equal(r!.key?.toString(), '0-0@0');
    const header = (h: string) => r!.headers[h]?.toString();
    assert.equal(header('millrace.error'), 'unlucky amount in row 1');
    assert.equal(header('millrace.error.name'), 'RangeError');
    assert.equal(header('millrace.error.code'), undefined);
    assert.equal(
      header('millrace.location'),
      "operator map#1 'double', stage 0, partition 0, row at source 0 partition 0 offset 0",
    );
    assert.equal(header('millrace.source'), '0-0@0');
    assert.equal(header('millrace.timestamp'), String(seen[0]!.timestamp));
  });

  it('loses none through a broker outage: the epoch commits once the dead letter is in the topic, once', async () => {
    const name = topic();
    const q = await start(name);
    try {
      await broker.stop();
      q.source('in').addData([{ id: 9, amount: 13 }]);
      await q.processAllAvailable();
      assert.equal(q.deadLetters().length, 1, 'the driver has the dead letter; the broker is down');
      const inKafkaAtCommit = new Promise<number>((resolve) =>
        q.once('epochCommitted', () => resolve(broker.highWatermark(name, 0))),
      );
      q.clock.advance(5 * 60_000);
      await broker.start();
      assert.equal(await inKafkaAtCommit, 1, 'the dead letter was in the topic when the epoch committed');
    } finally {
      await q.stop();
    }
    assert.equal((await broker.records(name, 0)).length, 1, 'and only once');
  });

  it('has the sink commit an epoch only after the dead letters received before it are in Kafka', async () => {
    const name = topic();
    const outputs = new SideOutputs(
      {
        deadLetters: { kind: 'kafka', brokers: [broker.bootstrap], topic: name, client: undefined },
        lateRows: null,
      },
      'run-1',
      (e) => assert.fail(e),
    );
    await outputs.open();
    try {
      await broker.stop();
      outputs.deadLetter(letter);
      const inKafka: number[] = [];
      const committer = outputs.beforeEachCommit({
        commit: async () => {
          inKafka.push(broker.highWatermark(name, 0));
        },
      });
      // The sink's commit is asked for while the broker is down; it is made once the letter is in.
      const committing = committer!.commit(0, []);
      await broker.start();
      await committing;
      assert.deepEqual(inKafka, [1]);
    } finally {
      await outputs.close();
    }
  });

  it('refuses a topic that does not exist when the query starts, with SIDE_OUTPUT_WRITE_FAILED', async () => {
    await assert.rejects(start('not-created'), (e: unknown) => {
      assert.ok(e instanceof MillraceError);
      assert.equal(e.code, 'SIDE_OUTPUT_WRITE_FAILED');
      assert.equal(
        e.message,
        `deadLetters: topic 'not-created' on ${broker.bootstrap} does not exist; create it first`,
      );
      return true;
    });
  });

  it('is restarted by the restart policy after a failed write, and the redone epoch writes the dead letter', async () => {
    const name = topic();
    const q = await startQuery(failing, {
      clock: 'manual',
      checkpointLocation: tempDir(),
      options: {
        onBadRecord: 'deadLetter',
        deadLetters: { kafka: { brokers: broker.bootstrap, topic: name, client: QUICK_RETRIES } },
        restartPolicy: { maxRetries: 1, initialBackoffMs: 1000 },
      },
    });
    try {
      await broker.stop();
      const restarting = once(q, 'restarting');
      q.source('in').addData([{ id: 5, amount: 13 }]);
      const [event] = (await restarting) as [{ error: MillraceError }];
      assert.equal(event.error.code, 'SIDE_OUTPUT_WRITE_FAILED');
      await broker.start();
      const started = once(q, 'started');
      q.clock.advance(1000);
      await started;
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    const records = await broker.records(name, 0);
    assert.deepEqual(
      records.map((r) => JSON.parse(r.value!.toString())),
      [{ id: 5, amount: 13 }],
    );
  });

  it('fails the query with SIDE_OUTPUT_WRITE_FAILED when the brokers stay unreachable', async () => {
    const name = topic();
    const q = await startQuery(failing, {
      clock: 'manual',
      options: {
        onBadRecord: 'deadLetter',
        deadLetters: {
          kafka: {
            brokers: broker.bootstrap,
            topic: name,
            client: QUICK_RETRIES,
          },
        },
      },
    });
    await broker.stop();
    try {
      q.source('in').addData([{ id: 3, amount: 13 }]);
      await assert.rejects(q.awaitTermination(), (e: unknown) => {
        assert.ok(e instanceof MillraceError);
        assert.equal(e.code, 'SIDE_OUTPUT_WRITE_FAILED');
        assert.match(
          e.message,
          new RegExp(`^deadLetters: cannot write to topic '${name}' on ${broker.bootstrap}: `),
        );
        return true;
      });
    } finally {
      await broker.start();
      await q.stop().catch(() => {});
    }
  });
});
