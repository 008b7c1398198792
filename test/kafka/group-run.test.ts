import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Producer } from 'kafkajs';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { KCAT, LIBRDKAFKA_MOCK, missing, NETNS } from '../peers.js';
import { TestBroker } from './broker/index.js';
import { eventsOf, eventually, kafkaClient } from './kafkajs-helpers.js';
import { kcatConsume } from './kcat.js';
import { startMockCluster } from './mock-cluster.js';
import { type Hosts, makeHosts } from './netns.js';

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('../fixtures/jobs/kafka.js', import.meta.url));
const SESSION_MS = 3000;
const tempDir = tempDirs('millrace-group-run');
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** A `millrace run --group` process, and the tasks it last said it runs. */
interface Member {
  readonly child: ChildProcess;
  tasks: string[];
  err: string;
  readonly exited: Promise<number | null>;
}

/** A member process; `host` is the command that runs it on another host (a network namespace). */
function member(
  bootstrap: string,
  checkpoint: string,
  extra: readonly string[],
  group = 'payments',
  host: readonly string[] = [],
): Member {
  const [program, ...before] = [...host, process.execPath];
  const child = spawn(
    program!,
    [
      ...before,
      BIN,
      'run',
      JOB,
      '--progress',
      'json',
      '--checkpoint',
      checkpoint,
      '--group',
      group,
      '--session-timeout',
      `${SESSION_MS}ms`,
      '-p',
      `brokers=${bootstrap}`,
      '-p',
      'checkpointInterval=200 ms',
      // A progress line every 100 ms: what the test looks at its output again on.
      '-p',
      'progressInterval=100 ms',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  const m: Member = {
    child,
    tasks: [],
    err: '',
    exited: once(child, 'exit').then(([code]) => {
      children.delete(child);
      return code as number | null;
    }),
  };
  child.stdout!.on('data', () => activity.emit('data'));
  child.stderr!.on('data', (d: Buffer) => {
    activity.emit('data');
    m.err += d.toString();
    for (const [, tasks] of m.err.matchAll(new RegExp(`member of group ${group}, tasks (.*)\n`, 'g'))) {
      m.tasks = tasks === 'none' ? [] : tasks!.split(', ');
    }
  });
  return m;
}

/** Where the keyed scenario runs: a broker, payments produced to its topic `in`, and the hosts of the members. */
interface KeyedFeed {
  readonly bootstrap: string;
  /** `cards` cards, by amount over the six partitions of `in`. */
  produce(n: number, cards: number): Promise<void>;
  /** Every payment produced so far (the query reads from the earliest offset). */
  readonly payments: readonly Payment[];
}

/** Every line a member writes: a progress report, a rebalance, an error. */
const activity = new EventEmitter();

/** Waits (bounded) until `check` holds, looking again whenever a member writes something. */
const until = (what: string, check: () => boolean | Promise<boolean>) =>
  eventually(SESSION_MS * 10, what, check, eventsOf([activity], ['data']));

/**
 * Three members count payments by card, which is not how the payments are partitioned, so the
 * counts go through the repartition topic; one member is SIGKILLed mid-stream. The output, read
 * by kcat, holds every card's exact count. `hostOf(k)` runs member k elsewhere (a namespace).
 */
async function countCardsAcrossSigkill(
  t: { diagnostic(message: string): void },
  feed: KeyedFeed,
  hostOf: (k: number) => readonly string[] = () => [],
): Promise<void> {
  const checkpoint = tempDir();
  const members = [1, 2, 3].map((k) =>
    member(
      feed.bootstrap,
      checkpoint,
      ['-p', 'case=count', '-p', 'outTopic=counts', '-p', 'exactlyOnce=true'],
      'cards',
      hostOf(k),
    ),
  );
  // Each process runs both stages of two partitions: 0.p reads the payments, 1.p counts the cards hashed to p.
  await until('four tasks each', () => members.every((m) => m.tasks.length === 4));
  assert.equal(new Set(members.flatMap((m) => m.tasks)).size, 12);
  /** The latest count of each card, as kcat reads the output (counts only grow). */
  const counts = async () => {
    const m = new Map<string, number>();
    for (const r of await kcatConsume(feed.bootstrap, 'counts', { isolation: 'read_committed' })) {
      const row = JSON.parse(r.value!) as { card: string; n: number };
      m.set(row.card, Math.max(m.get(row.card) ?? 0, row.n));
    }
    return m;
  };
  const counted = async () => [...(await counts()).values()].reduce((a, b) => a + b, 0);
  await feed.produce(600, 7);
  await until('the first payments counted', async () => (await counted()) >= feed.payments.length);
  const [victim, ...survivors] = members as [Member, Member, Member];
  victim.child.kill('SIGKILL');
  await victim.exited;
  const killedAt = performance.now();
  await feed.produce(600, 7);
  await until('the survivors run six tasks each', () => survivors.every((m) => m.tasks.length === 6));
  await until('every payment counted', async () => (await counted()) >= feed.payments.length);
  t.diagnostic(
    `SIGKILL → every payment counted: ${(performance.now() - killedAt).toFixed(0)} ms (session timeout ${SESSION_MS} ms)`,
  );
  const model = new Map<string, number>();
  for (const p of feed.payments) model.set(p.card, (model.get(p.card) ?? 0) + 1);
  assert.deepEqual(Object.fromEntries([...(await counts())].sort()), Object.fromEntries([...model].sort()));
  for (const m of survivors) m.child.kill('SIGTERM');
  assert.deepEqual(await Promise.all(survivors.map((m) => m.exited)), [0, 0]);
}

/** A Kafka peer the scenario runs against, and how the job writes to it. */
interface Peer {
  readonly name: string;
  readonly skip: string | false;
  /** Exactly-once (the transactional sink) or at-least-once. */
  readonly exactlyOnce: boolean;
  start(): Promise<{
    bootstrap: string;
    createTopic(name: string, partitions: number): unknown;
    close(): Promise<void>;
  }>;
}

const peers: Peer[] = [
  {
    name: "the project's Kafka-protocol test broker, with the transactional sink",
    skip: false,
    exactlyOnce: true,
    start: () => TestBroker.start({ autoCreateTopics: false }),
  },
  {
    // Its transactions are not real, and its controller id breaks kafkajs' idempotent producer.
    name: "librdkafka's mock cluster, with the at-least-once sink",
    skip: missing(LIBRDKAFKA_MOCK),
    exactlyOnce: false,
    start: () => startMockCluster({ brokers: 1, topics: [] }),
  },
];

for (const peer of peers) {
  describe(`millrace run --group, three processes, on ${peer.name}`, { skip: peer.skip }, () => {
    let broker: Awaited<ReturnType<Peer['start']>>;
    let producer: Producer;
    let produced = 0;
    before(async () => {
      broker = await peer.start();
      await broker.createTopic('in', 6);
      await broker.createTopic('out', 3);
      await broker.createTopic('counts', 3);
      producer = kafkaClient(broker.bootstrap).producer({ idempotent: peer.exactlyOnce });
      await producer.connect();
    });
    after(async () => {
      await producer.disconnect();
      await broker.close();
    });
    const extra = peer.exactlyOnce
      ? ['-p', 'case=copy', '-p', 'exactlyOnce=true']
      : [
          '-p',
          'case=copy',
          '-p',
          'exactlyOnce=false',
          '-p',
          'idempotent=false',
          '-p',
          'isolation=read_uncommitted',
        ];
    const payments: Payment[] = [];

    /** Payments of cards `c<amount>`, or of `cards` cards (`c<amount % cards>`), by amount over the partitions. */
    const produce = async (n: number, cards = 0) => {
      const batch: Payment[] = Array.from({ length: n }, (_, j) => ({
        card: `c${cards === 0 ? produced + j : (produced + j) % cards}`,
        amount: produced + j,
        ts: 1_000_000 + produced + j,
      }));
      produced += n;
      payments.push(...batch);
      await producer.send({
        topic: 'in',
        messages: batch.map((p) => ({ key: p.card, value: JSON.stringify(p), partition: p.amount % 6 })),
      });
    };
    /** The amounts in the output, as kcat reads them (read_committed), sorted. */
    const output = async () =>
      (await kcatConsume(broker.bootstrap, 'out', { isolation: 'read_committed' }))
        .map((r) => (JSON.parse(r.value!) as Payment).amount)
        .sort((a, b) => a - b);
    const distinct = async () => new Set(await output()).size;
    it(`shares six partitions two by two; after a SIGKILL the survivors take its tasks, and kcat reads every row ${peer.exactlyOnce ? 'exactly once' : 'at least once'}`, {
      skip: missing(KCAT),
    }, async (t) => {
      const checkpoint = tempDir();
      const members = [0, 1, 2].map(() => member(broker.bootstrap, checkpoint, extra));
      await until('two tasks each', () => members.every((m) => m.tasks.length === 2));
      assert.equal(new Set(members.flatMap((m) => m.tasks)).size, 6);
      await produce(600);
      await until('600 rows out', async () => (await distinct()) >= 600);
      const [victim, ...survivors] = members as [Member, Member, Member];
      victim.child.kill('SIGKILL');
      await victim.exited;
      const killedAt = performance.now();
      await produce(600);
      await until('the survivors run three tasks each', () => survivors.every((m) => m.tasks.length === 3));
      await until('1200 rows out', async () => (await distinct()) >= 1200);
      const failoverMs = performance.now() - killedAt;
      t.diagnostic(
        `SIGKILL → every row of the moved tasks out: ${failoverMs.toFixed(0)} ms (session timeout ${SESSION_MS} ms)`,
      );
      const all = Array.from({ length: 1200 }, (_, i) => i);
      const amounts = await output();
      if (peer.exactlyOnce) assert.deepEqual(amounts, all, 'every payment once, none twice');
      else assert.deepEqual([...new Set(amounts)], all, 'every payment, some perhaps twice');
      for (const m of survivors) m.child.kill('SIGTERM');
      assert.deepEqual(await Promise.all(survivors.map((m) => m.exited)), [0, 0]);
    });

    it(
      'counts by card over three processes, through the repartition topic, exactly as one thread would, across a SIGKILL',
      {
        skip: !peer.exactlyOnce
          ? "kafkajs' admin calls go to the mock cluster's controller, whose id names no broker, so the repartition topic cannot be made"
          : missing(KCAT),
      },
      (t) => countCardsAcrossSigkill(t, { bootstrap: broker.bootstrap, produce, payments }),
    );
  });
}

describe('millrace run --group, three hosts in network namespaces', { skip: missing(NETNS) }, () => {
  let hosts: Hosts;
  let broker: TestBroker;
  let producer: Producer;
  const payments: Payment[] = [];
  before(async () => {
    hosts = makeHosts(3);
    broker = await TestBroker.start({ autoCreateTopics: false, host: hosts.address });
    broker.createTopic('in', 6);
    broker.createTopic('counts', 3);
    producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
    await producer.connect();
  });
  after(async () => {
    await producer?.disconnect();
    await broker?.close();
    hosts?.close();
  });

  it('counts by card exactly, each member on a host of its own reaching the broker over veth, across a SIGKILL', {
    skip: missing(KCAT),
  }, async (t) => {
    await countCardsAcrossSigkill(
      t,
      {
        bootstrap: broker.bootstrap,
        payments,
        produce: async (n, cards) => {
          const batch = Array.from({ length: n }, (_, j) => {
            const i = payments.length + j;
            return { card: `c${i % cards}`, amount: i, ts: 1_000_000 + i };
          });
          payments.push(...batch);
          await producer.send({
            topic: 'in',
            messages: batch.map((p) => ({
              key: p.card,
              value: JSON.stringify(p),
              partition: p.amount % 6,
            })),
          });
        },
      },
      (k) => hosts.command(k),
    );
    // Each member reached the broker from its own host's address.
    for (const k of [1, 2, 3]) {
      assert.ok(
        broker.clientAddresses.has(hosts.addressOf(k)),
        `host ${k} connected from ${hosts.addressOf(k)}`,
      );
    }
  });
});
