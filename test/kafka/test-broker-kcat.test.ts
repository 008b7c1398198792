import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { TestBroker } from './broker/index.js';
import { kafkaClient } from './kafkajs-helpers.js';

/** Runs kcat with `args` (feeding `input` on stdin if given) and returns its stdout. */
function kcat(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('kcat', args, { timeout: 20_000 }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`kcat ${args.join(' ')} failed: ${error.message}\n${stderr}`))
        : resolve(stdout),
    );
    child.stdin?.end(input ?? '');
  });
}

const kcatMissing = spawnSync('kcat', ['-V']).error !== undefined;

describe('TestBroker served to librdkafka (kcat)', { skip: kcatMissing && 'kcat is not installed' }, () => {
  let broker: TestBroker;

  before(async () => {
    broker = await TestBroker.start();
  });

  after(async () => {
    await broker.close();
  });

  it('lets a read_committed kcat consumer read only committed transactional rows', async () => {
    broker.createTopic('kcat-txn');
    const producer = kafkaClient(broker.bootstrap).producer({
      transactionalId: 'kcat-txn',
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    const aborted = await producer.transaction();
    await aborted.send({ topic: 'kcat-txn', messages: [{ value: 'aborted' }] });
    await aborted.abort();
    const committed = await producer.transaction();
    await committed.send({ topic: 'kcat-txn', messages: [{ value: 'c1' }, { value: 'c2' }] });
    await committed.commit();
    await producer.disconnect();

    const args = ['-C', '-b', broker.bootstrap, '-t', 'kcat-txn', '-e', '-o', 'beginning'];
    assert.equal(await kcat([...args, '-X', 'isolation.level=read_committed']), 'c1\nc2\n');
    assert.equal(await kcat([...args, '-X', 'isolation.level=read_uncommitted']), 'aborted\nc1\nc2\n');
  });

  it('accepts an idempotent kcat producer and serves a kcat group consumer', async () => {
    broker.createTopic('kcat-idempotent');
    await kcat(
      ['-P', '-b', broker.bootstrap, '-t', 'kcat-idempotent', '-X', 'enable.idempotence=true'],
      'x1\nx2\nx3\n',
    );
    const stored = await broker.records('kcat-idempotent', 0);
    assert.deepEqual(
      stored.map((r) => r.value?.toString()),
      ['x1', 'x2', 'x3'],
    );
    const consumed = await kcat([
      '-C',
      '-b',
      broker.bootstrap,
      '-G',
      'kcat-g',
      'kcat-idempotent',
      '-c',
      '3',
      '-X',
      'auto.offset.reset=earliest',
    ]);
    assert.equal(consumed, 'x1\nx2\nx3\n');
  });
});
