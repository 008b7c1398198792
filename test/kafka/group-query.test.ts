import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { main } from '../../src/cli/main.js';
import { platformaticUnsupported } from '../../src/connectors/kafka/platformatic-membership.js';
import { ErrorCode, type GroupQuery, startQuery } from '../../src/index.js';
import { fakeIO } from '../cli/fake-io.js';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { paymentsBroker, untilRunning as untilRunningWithin } from './group-fixture.js';
import { eventually, within } from './kafkajs-helpers.js';

const JOB = new URL('../fixtures/jobs/kafka.js', import.meta.url);
const SESSION_MS = 3000;
const tempDir = tempDirs('millrace-group-query');

describe('a job run by a group of members', () => {
  const feed = paymentsBroker(['out', 'mixed'], (i) => `c${i}`);
  const produce = (n: number) => feed.produce(n);

  /** The amounts of the payments in the output that read_committed sees. */
  const committedAmounts = async (topic = 'out'): Promise<number[]> => {
    const out: number[] = [];
    for (const p of [0, 1, 2]) {
      for (const r of await feed.broker.records(topic, p, { isolation: 'read_committed' })) {
        out.push((JSON.parse(String(r.value)) as Payment).amount);
      }
    }
    return out.sort((a, b) => a - b);
  };

  /** Waits (bounded) until the committed output holds `n` rows. */
  const untilCommitted = (n: number, topic = 'out') =>
    eventually(
      SESSION_MS * 10,
      `${n} committed output rows`,
      async () => (await committedAmounts(topic)).length >= n,
      (changed) => feed.broker.onData(changed),
    );

  const member = (
    checkpoint: string,
    group = 'payments-copy',
    client: 'kafkajs' | '@platformatic/kafka' = 'kafkajs',
    outTopic = 'out',
  ) =>
    startQuery(JOB, {
      params: {
        brokers: feed.broker.bootstrap,
        case: 'copy',
        outTopic,
        exactlyOnce: 'true',
        checkpointInterval: '200 ms',
      },
      checkpointLocation: checkpoint,
      group: { id: group, sessionTimeout: SESSION_MS, client },
      metrics: false,
    });

  const untilRunning = (members: GroupQuery[], each: number[]) =>
    untilRunningWithin(members, each, SESSION_MS * 10);

  it('shares the partitions, moves a leaving member’s tasks, and writes every row exactly once', async () => {
    const checkpoint = tempDir();
    const a = await member(checkpoint);
    const b = await member(checkpoint);
    try {
      await untilRunning([a, b], [3, 3]);
      const tasksOf = (m: GroupQuery) => m.tasks.map((t) => t.task);
      assert.equal(
        new Set([...tasksOf(a), ...tasksOf(b)]).size,
        6,
        'the six tasks are split between the two',
      );
      await produce(600);
      await untilCommitted(600);
      // b leaves: a takes its tasks over, from their checkpoints.
      await b.stop();
      await untilRunning([a], [6]);
      await produce(600);
      await untilCommitted(1200);
      assert.deepEqual(
        await committedAmounts(),
        Array.from({ length: 1200 }, (_, i) => i),
      );
      for (let p = 0; p < 6; p++) assert.ok(existsSync(join(checkpoint, 'tasks', `0.${p}`, 'commits')));
      // `checkpoint inspect` shows the group and each task, held by the member that runs them all.
      const t = fakeIO();
      assert.equal(await main(['checkpoint', 'inspect', checkpoint, '--json'], t.io), 0, t.stderr());
      const shown = JSON.parse(t.stdout()) as {
        group: { queryId: string; topics: string[]; partitions: number };
        tasks: { task: string; queryId: string; lock: { held: boolean; owner: { pid: number } } | null }[];
      };
      assert.deepEqual([shown.group.queryId, shown.group.topics, shown.group.partitions], [a.id, ['in'], 6]);
      assert.deepEqual(
        shown.tasks.map((x) => [x.task, x.queryId, x.lock?.held, x.lock?.owner.pid]),
        [0, 1, 2, 3, 4, 5].map((p) => [`0.${p}`, a.id, true, process.pid]),
      );
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    // The group's checkpoint is not a single run's.
    await assert.rejects(
      startQuery(JOB, {
        params: { brokers: feed.broker.bootstrap, case: 'copy' },
        checkpointLocation: checkpoint,
        metrics: false,
      }),
      (e: { code: string }) => e.code === ErrorCode.CHECKPOINT_INCOMPATIBLE_CHANGE,
    );
  });

  it('shares the job between members whose memberships kafkajs and @platformatic/kafka keep', {
    skip: platformaticUnsupported() ?? false,
  }, async () => {
    const checkpoint = tempDir();
    const a = await member(checkpoint, 'payments-mixed', 'kafkajs', 'mixed');
    const b = await member(checkpoint, 'payments-mixed', '@platformatic/kafka', 'mixed');
    try {
      await untilRunning([a, b], [3, 3]);
      await produce(600);
      const n = feed.produced;
      await untilCommitted(n, 'mixed');
      // The group read the topic from the start: every payment so far, once.
      assert.deepEqual(
        await committedAmounts('mixed'),
        Array.from({ length: n }, (_, i) => i),
      );
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('reports a task’s status in the metrics of the member that runs it, and only there', async () => {
    const checkpoint = tempDir();
    const registries = [new Registry(), new Registry()];
    const [a, b] = await Promise.all(
      registries.map((registry) =>
        startQuery(JOB, {
          params: { brokers: feed.broker.bootstrap, case: 'copy', checkpointInterval: '200 ms' },
          checkpointLocation: checkpoint,
          group: { id: 'payments-metrics', sessionTimeout: SESSION_MS },
          metrics: { registry },
        }),
      ),
    );
    /** The tasks a registry says are active. */
    const active = async (r: Registry) =>
      (await r.getSingleMetric('millrace_query_status')!.get()).values
        .filter((v) => v.labels.state === 'active' && v.value === 1)
        .map((v) => String(v.labels.query))
        .sort();
    try {
      // A task's metrics are registered before it counts as running.
      await untilRunning([a!, b!], [3, 3]);
      const [ofA, ofB] = [await active(registries[0]!), await active(registries[1]!)];
      assert.deepEqual([ofA.length, ofB.length, new Set([...ofA, ...ofB]).size], [3, 3, 6]);
      // b leaves: its tasks' gauges go as each task ends, and a reports all six.
      await b!.stop();
      await untilRunning([a!], [6]);
      assert.equal((await active(registries[0]!)).length, 6);
      const statuses = (await registries[1]!.getSingleMetric('millrace_query_status')!.get()).values;
      assert.deepEqual(statuses, [], 'no status series left for tasks that moved away');
    } finally {
      await Promise.all([a!.stop(), b!.stop()]);
    }
  });

  it('tells each progress which task it is and which tasks the member owns', async () => {
    const a = await member(tempDir(), 'payments-progress');
    try {
      const [p] = await within(SESSION_MS * 10, 'a progress', once(a, 'progress'));
      assert.match(p.group.task, /^0\.[0-5]$/);
      assert.equal(p.group.id, 'payments-progress');
      assert.equal(p.group.ownedTasks.length, 6);
      assert.equal(p.name, `query/${p.group.task}`, 'a task runs as a query named after the task');
    } finally {
      await a.stop();
    }
  });

  it('refuses a source whose partitions no group can share', async () => {
    await assert.rejects(
      startQuery(new URL('../fixtures/jobs/stateless.js', import.meta.url), {
        checkpointLocation: tempDir(),
        group: 'payments-memory',
        metrics: false,
      }),
      (e: { code: string; message: string }) =>
        e.code === ErrorCode.UNSUPPORTED_OPERATION && /has none to share/.test(e.message),
    );
  });

  it('refuses a group run without a checkpoint', async () => {
    await assert.rejects(
      startQuery(JOB, { params: { brokers: feed.broker.bootstrap, case: 'copy' }, group: 'payments-none' }),
      (e: { code: string }) => e.code === ErrorCode.INVALID_ARGUMENT,
    );
  });
});
