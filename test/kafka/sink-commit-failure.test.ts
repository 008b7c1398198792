import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import type { Producer } from 'kafkajs';
import { MillraceError, type StreamingQuery, startQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { TestBroker } from './broker/index.js';
import { kafkaClient } from './kafkajs-helpers.js';

const job = new URL('../fixtures/jobs/kafka.js', import.meta.url);
const tempDir = tempDirs('millrace-sink-commit');

const pay = (card: string, amount: number): Payment => ({ card, amount, ts: 0 });

/**
 * An exactly-once Kafka sink whose transaction commit fails (the broker refuses it as timed out):
 * the query fails with SINK_COMMIT_FAILED, not as a checkpoint write, and a restart redoes the epoch.
 */
describe('a Kafka transaction that fails to commit', () => {
  let broker: TestBroker;
  let producer: Producer;
  let topics = 0;

  function topic(): string {
    const name = `commit-${topics++}`;
    broker.createTopic(name, 1);
    return name;
  }

  async function copyQuery(input: string, output: string, options = {}): Promise<StreamingQuery> {
    await producer.send({
      topic: input,
      messages: [pay('a', 1), pay('b', 2)].map((p) => ({ key: p.card, value: JSON.stringify(p) })),
    });
    return startQuery(job, {
      params: {
        brokers: broker.bootstrap,
        topic: input,
        outTopic: output,
        case: 'copy',
        exactlyOnce: 'true',
      },
      clock: 'manual',
      checkpointLocation: tempDir(),
      ...options,
    });
  }

  async function committedValues(name: string): Promise<string[]> {
    return (await broker.records(name, 0, { isolation: 'read_committed' })).map((r) => r.value!.toString());
  }

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
    producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await broker?.close();
  });

  it('fails the query with SINK_COMMIT_FAILED naming the sink, the epoch and the cause', async () => {
    const output = topic();
    const q = await copyQuery(topic(), output);
    try {
      await q.processAllAvailable();
      broker.expireNextTxnCommit();
      q.clock.advance(1000);
      await assert.rejects(q.awaitTermination(), (e: unknown) => {
        assert.ok(e instanceof MillraceError);
        assert.equal(e.code, 'SINK_COMMIT_FAILED');
        assert.match(e.message, /^KafkaSink\[commit-\d+, exactly-once\] partition 0: /);
        assert.match(e.message, /cannot commit the transaction of epoch 0/);
        assert.match(e.message, /Producer attempted an operation with an old epoch/);
        return true;
      });
      assert.deepEqual(await committedValues(output), [], 'nothing of the epoch is visible');
    } finally {
      await q.stop().catch(() => {});
    }
  });

  it('is restarted by the restart policy, and the redone epoch is written once', async () => {
    const output = topic();
    const q = await copyQuery(topic(), output, {
      options: { restartPolicy: { maxRetries: 1, initialBackoffMs: 1000 } },
    });
    try {
      await q.processAllAvailable();
      broker.expireNextTxnCommit();
      const restarting = once(q, 'restarting');
      q.clock.advance(1000);
      const [event] = (await restarting) as [{ error: MillraceError }];
      assert.equal(event.error.code, 'SINK_COMMIT_FAILED');
      const started = once(q, 'started');
      q.clock.advance(1000);
      await started;
      await q.processAllAvailable();
      const committed = once(q, 'epochCommitted');
      q.clock.advance(1000);
      await committed;
      assert.deepEqual(
        await committedValues(output),
        [pay('a', 1), pay('b', 2)].map((p) => JSON.stringify(p)),
      );
      assert.equal(q.status.attempt, 2);
    } finally {
      await q.stop();
    }
  });
});
