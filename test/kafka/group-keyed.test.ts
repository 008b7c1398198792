import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode, type GroupQuery, type StreamingQuery, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import {
  paymentsBroker,
  runningTasks as running,
  untilRunning as untilRunningWithin,
} from './group-fixture.js';
import { eventually } from './kafkajs-helpers.js';

const JOB = new URL('../fixtures/jobs/kafka.js', import.meta.url);
const SESSION_MS = 3000;
const CARDS = 7;
const tempDir = tempDirs('millrace-group-keyed');

/**
 * A keyed aggregation run by a group: payments are partitioned by amount (`amount % 6`) and
 * counted per card, so every card's payments are spread over several source partitions, and the
 * group must bring them together through its repartition topic.
 */
describe('a keyed aggregation run by a group', () => {
  const feed = paymentsBroker(['solo', 'trio', 'scaled'], (i) => `c${i % CARDS}`);
  const produce = (n: number) => feed.produce(n);

  /** What one thread would count of payments 0 … n - 1: per card, the count and the total. */
  const model = (n: number) => {
    const m = new Map<string, { n: number; total: number }>();
    for (let i = 0; i < n; i++) {
      const c = m.get(`c${i % CARDS}`) ?? { n: 0, total: 0 };
      m.set(`c${i % CARDS}`, { n: c.n + 1, total: c.total + i });
    }
    return Object.fromEntries([...m].sort());
  };

  /** The latest count of each card in the committed output (counts only grow: the largest is the latest). */
  const counts = async (topic: string) => {
    const m = new Map<string, { n: number; total: number }>();
    for (const p of [0, 1, 2]) {
      for (const r of await feed.broker.records(topic, p, { isolation: 'read_committed' })) {
        const row = JSON.parse(String(r.value)) as { card: string; n: number; total: number };
        if ((m.get(row.card)?.n ?? 0) < row.n) m.set(row.card, { n: row.n, total: row.total });
      }
    }
    return Object.fromEntries([...m].sort());
  };

  /** Waits (bounded) until the output's counts add up to `n` payments; `check` runs at each look. */
  const untilCounted = (topic: string, n: number, check: () => void = () => {}) =>
    eventually(
      SESSION_MS * 15,
      `${n} payments counted in ${topic}`,
      async () => {
        check();
        return Object.values(await counts(topic)).reduce((s, c) => s + c.n, 0) >= n;
      },
      (changed) => feed.broker.onData(changed),
    );

  const params = (outTopic: string) => ({
    brokers: feed.broker.bootstrap,
    case: 'count',
    outTopic,
    exactlyOnce: 'true',
    checkpointInterval: '200 ms',
  });

  const member = (checkpoint: string, group: string, outTopic: string) =>
    startQuery(JOB, {
      params: params(outTopic),
      checkpointLocation: checkpoint,
      group: { id: group, sessionTimeout: SESSION_MS },
      metrics: false,
    });

  const untilRunning = (members: GroupQuery[], each: number[]) =>
    untilRunningWithin(members, each, SESSION_MS * 10);

  /** Fails if two members run one task at the same moment. */
  const neverShared = (members: GroupQuery[]) => () => {
    const all = members.filter((m) => m.isActive).flatMap(running);
    assert.equal(new Set(all).size, all.length, `a task runs in two members: ${all.sort().join(' ')}`);
  };

  it('counts each card as one process does, with three members', async () => {
    const start = feed.produced;
    assert.equal(start, 0);
    await produce(1200);
    let solo: StreamingQuery | null = await startQuery(JOB, {
      params: params('solo'),
      checkpointLocation: tempDir(),
      metrics: false,
    });
    try {
      await untilCounted('solo', 1200);
    } finally {
      await solo.stop();
      solo = null;
    }
    const checkpoint = tempDir();
    const members = [
      await member(checkpoint, 'cards-trio', 'trio'),
      await member(checkpoint, 'cards-trio', 'trio'),
      await member(checkpoint, 'cards-trio', 'trio'),
    ];
    try {
      await untilRunning(members, [4, 4, 4]);
      for (const m of members) {
        // Task 0.p reads partition p of the payments; 1.p counts the cards whose key hashes to p.
        const stage = (k: string) =>
          running(m)
            .filter((t) => t.startsWith(`${k}.`))
            .map((t) => t.slice(2));
        assert.deepEqual(stage('1'), stage('0'), 'a member runs both stages of its partitions');
      }
      await untilCounted('trio', 1200, neverShared(members));
    } finally {
      await Promise.all(members.map((m) => m.stop()));
    }
    assert.deepEqual(await counts('trio'), await counts('solo'));
    assert.deepEqual(await counts('trio'), model(1200));
    const repartition = feed.broker.topics().filter((t) => t.endsWith('-stage-1-repartition'));
    assert.equal(repartition.length, 1, 'one repartition topic, made by the first member');
    assert.equal(
      [0, 1, 2, 3, 4, 5].reduce((s, p) => s + feed.broker.highWatermark(repartition[0]!, p), 0) > 0,
      true,
    );
  });

  it('keeps every count exact while the group grows from one member to three and shrinks to two', async () => {
    const checkpoint = tempDir();
    const base = feed.produced;
    const group = 'cards-scaled';
    const first = await member(checkpoint, group, 'scaled');
    const members = [first];
    try {
      await untilRunning(members, [12]);
      await produce(600);
      await untilCounted('scaled', base + 600);
      members.push(await member(checkpoint, group, 'scaled'), await member(checkpoint, group, 'scaled'));
      await untilRunning(members, [4, 4, 4]);
      await produce(600);
      await untilCounted('scaled', base + 1200, neverShared(members));
      // The third leaves; its tasks move to the other two with their state.
      await members.pop()!.stop();
      await untilRunning(members, [6, 6]);
      await produce(600);
      await untilCounted('scaled', base + 1800, neverShared(members));
    } finally {
      await Promise.all(members.map((m) => m.stop()));
    }
    // This query started at the earliest offset: it counted the first test's payments too.
    assert.deepEqual(await counts('scaled'), model(base + 1800));
  });

  it('refuses a second keyed operator over other keys, which one repartition topic cannot carry', async () => {
    await assert.rejects(
      startQuery(JOB, {
        params: { ...params('solo'), case: 'dedupCount' },
        checkpointLocation: tempDir(),
        group: 'cards-twice',
        metrics: false,
      }),
      (e: { code: string; message: string }) =>
        e.code === ErrorCode.UNSUPPORTED_OPERATION && /keyed by other columns/.test(e.message),
    );
  });
});
