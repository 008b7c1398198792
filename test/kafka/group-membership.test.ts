import assert from 'node:assert/strict';
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  type GroupClient,
  type GroupMembership,
  joinGroup,
} from '../../src/connectors/kafka/group-membership.js';
import { platformaticUnsupported } from '../../src/connectors/kafka/platformatic-membership.js';
import type { MemberReply } from '../fixtures/group-member.js';
import { LIBRDKAFKA_MOCK, missing } from '../peers.js';
import { TestBroker } from './broker/index.js';
import { within } from './kafkajs-helpers.js';
import { startMockCluster } from './mock-cluster.js';

const MEMBER = fileURLToPath(new URL('../fixtures/group-member.js', import.meta.url));
const SESSION_MS = 3000;

type Partitions = readonly (readonly [string, number])[];

/**
 * The latest assignment of each member, by the test's name for it, and a way to wait until they
 * satisfy a condition (checked on every assignment; bounded).
 */
class GroupView {
  readonly latest = new Map<string, Partitions>();
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  assigned(name: string, partitions: Partitions): void {
    this.latest.set(name, partitions);
    this.waiters = this.waiters.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }

  forget(name: string): void {
    this.latest.delete(name);
  }

  /** Resolves once every named member holds `each` partitions and together they hold `total`. */
  until(names: readonly string[], each: number[], total: number, what: string): Promise<void> {
    const check = () => {
      const held = names.map((n) => this.latest.get(n) ?? []);
      const all = new Set(held.flat().map(([t, p]) => `${t}:${p}`));
      return (
        held.every((h, i) => h.length === each[i]) && all.size === total && this.latest.size === names.length
      );
    };
    if (check()) return Promise.resolve();
    return within(
      SESSION_MS * 5,
      what,
      new Promise<void>((resolve) => this.waiters.push({ check, resolve })),
    );
  }

  of(name: string): string[] {
    return (this.latest.get(name) ?? []).map(([t, p]) => `${t}:${p}`);
  }
}

/** A Kafka peer the scenarios run against: where it listens, and how topics are made there. */
interface Peer {
  readonly bootstrap: string;
  createTopic(name: string, partitions: number): Promise<void> | void;
  close(): Promise<void>;
}

const peers: { name: string; skip: string | false; start: () => Promise<Peer> }[] = [
  {
    name: "the project's Kafka-protocol test broker",
    skip: false,
    start: async () => {
      const broker = await TestBroker.start();
      return {
        bootstrap: broker.bootstrap,
        createTopic: (n, p) => broker.createTopic(n, p),
        close: () => broker.close(),
      };
    },
  },
  {
    name: "librdkafka's mock cluster",
    skip: missing(LIBRDKAFKA_MOCK),
    start: async () => {
      const cluster = await startMockCluster({ brokers: 1, topics: [] });
      return {
        bootstrap: cluster.bootstrap,
        createTopic: (n, p) => cluster.createTopic(n, p),
        close: () => cluster.close(),
      };
    },
  },
];

for (const peer of peers) {
  describe(`Kafka group membership (the group protocol shares partitions between processes), on ${peer.name}`, {
    skip: peer.skip,
  }, () => {
    let broker: Peer;
    const members: GroupMembership[] = [];
    const children: ChildProcess[] = [];

    before(async () => {
      broker = await peer.start();
    });

    after(async () => {
      for (const c of children) c.kill('SIGKILL');
      for (const m of members) await m.leave().catch(() => {});
      await broker.close();
    });

    const join = async (view: GroupView, name: string, groupId: string, topic: string) => {
      const m = await joinGroup({
        brokers: broker.bootstrap,
        groupId,
        topics: [topic],
        sessionTimeoutMs: SESSION_MS,
        onAssigned: (a) => view.assigned(name, a.partitions),
      });
      members.push(m);
      return m;
    };

    it('gives each of three members two of six partitions; when one leaves, the two others keep theirs and share its two', async () => {
      await broker.createTopic('payments', 6);
      const view = new GroupView();
      const a = await join(view, 'a', 'fraud', 'payments');
      assert.equal(a.assignment?.partitions.length, 6, 'a lone member owns every partition');
      assert.equal(a.assignment?.leader, true);
      const b = await join(view, 'b', 'fraud', 'payments');
      const c = await join(view, 'c', 'fraud', 'payments');
      await view.until(['a', 'b', 'c'], [2, 2, 2], 6, 'three members with two partitions each');
      const before = { a: view.of('a'), c: view.of('c') };

      await b.leave();
      view.forget('b');
      await view.until(['a', 'c'], [3, 3], 6, 'two members with three partitions each');
      for (const name of ['a', 'c'] as const) {
        for (const p of before[name]) assert.ok(view.of(name).includes(p), `${name} keeps ${p}`);
      }
      assert.ok(c.assignment!.rebalance > 1);
    });

    it('gives a killed member’s partitions to the survivors once its session has timed out', async () => {
      await broker.createTopic('alerts', 6);
      const view = new GroupView();
      await join(view, 'a', 'alerting', 'alerts');
      await join(view, 'b', 'alerting', 'alerts');
      const child = fork(MEMBER, [broker.bootstrap, 'alerting', 'alerts', String(SESSION_MS)], {
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      children.push(child);
      child.on('message', (m: MemberReply) => view.assigned('child', m.partitions));
      await view.until(['a', 'b', 'child'], [2, 2, 2], 6, 'two members here and one in a child process');

      const killedAt = Date.now();
      child.kill('SIGKILL');
      await once(child, 'exit');
      view.forget('child');
      await view.until(['a', 'b'], [3, 3], 6, 'the survivors own all six partitions');
      const tookMs = Date.now() - killedAt;
      assert.ok(
        tookMs >= SESSION_MS - 500,
        `the coordinator waited for the session to time out (${tookMs} ms)`,
      );
    });

    it('refuses options it cannot use, with coded errors', async () => {
      const base = { brokers: broker.bootstrap, groupId: 'g', topics: ['t'], onAssigned: () => {} };
      await assert.rejects(joinGroup({ ...base, groupId: '' }), { code: 'INVALID_ARGUMENT' });
      await assert.rejects(joinGroup({ ...base, topics: [] }), { code: 'INVALID_ARGUMENT' });
      await assert.rejects(joinGroup({ ...base, sessionTimeoutMs: 1000, heartbeatIntervalMs: 1000 }), {
        code: 'INVALID_ARGUMENT',
      });
      await assert.rejects(joinGroup({ ...base, brokers: '' }), { code: 'INVALID_ARGUMENT' });
      await assert.rejects(joinGroup({ ...base, library: 'rdkafka' as GroupClient }), {
        code: 'INVALID_ARGUMENT',
      });
      await assert.rejects(joinGroup({ ...base, instanceId: 'host-a' }), {
        code: 'INVALID_ARGUMENT',
        message: /kafkajs has no static membership/,
      });
    });
  });
}

const PLATFORMATIC_UNAVAILABLE = platformaticUnsupported() ?? false;

describe("group membership kept by @platformatic/kafka, on the project's test broker", {
  skip: PLATFORMATIC_UNAVAILABLE,
}, () => {
  let broker: TestBroker;
  const members: GroupMembership[] = [];
  const children: ChildProcess[] = [];
  before(async () => {
    broker = await TestBroker.start();
  });
  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const m of members) await m.leave().catch(() => {});
    await broker.close();
  });
  const join = async (view: GroupView, name: string, groupId: string, library: GroupClient) => {
    const m = await joinGroup({
      brokers: broker.bootstrap,
      groupId,
      topics: ['payments'],
      sessionTimeoutMs: SESSION_MS,
      library,
      onAssigned: (a) => view.assigned(name, a.partitions),
    });
    members.push(m);
    return m;
  };

  it('shares six partitions with a kafkajs member two by two, through the same sticky assignor', async () => {
    broker.createTopic('payments', 6);
    const view = new GroupView();
    const a = await join(view, 'a', 'mixed', 'kafkajs');
    await join(view, 'b', 'mixed', '@platformatic/kafka');
    const c = await join(view, 'c', 'mixed', '@platformatic/kafka');
    await view.until(['a', 'b', 'c'], [2, 2, 2], 6, 'three members with two partitions each');
    const before = { b: view.of('b'), c: view.of('c') };
    // The kafkajs member led (it joined first); now a @platformatic/kafka member leads.
    await a.leave();
    view.forget('a');
    await view.until(['b', 'c'], [3, 3], 6, 'two members with three partitions each');
    for (const name of ['b', 'c'] as const) {
      for (const p of before[name]) assert.ok(view.of(name).includes(p), `${name} keeps ${p}`);
    }
    assert.ok(c.assignment!.rebalance > 1);
  });

  it('gives a static member that restarts within its session its partitions back, and the others never rebalance', async () => {
    broker.createTopic('static', 6);
    const view = new GroupView();
    const session = 10 * SESSION_MS;
    const inProcess = await Promise.all(
      ['a', 'b'].map(async (name) => {
        const m = await joinGroup({
          brokers: broker.bootstrap,
          groupId: 'statics',
          topics: ['static'],
          sessionTimeoutMs: session,
          library: '@platformatic/kafka',
          instanceId: `host-${name}`,
          onAssigned: (x) => view.assigned(name, x.partitions),
        });
        members.push(m);
        return m;
      }),
    );
    const host = () => {
      const child = fork(
        MEMBER,
        [broker.bootstrap, 'statics', 'static', String(session), '@platformatic/kafka', 'host-c'],
        {
          stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
        },
      );
      children.push(child);
      child.on('message', (m: MemberReply) => view.assigned('c', m.partitions));
      return child;
    };
    const first = host();
    await view.until(['a', 'b', 'c'], [2, 2, 2], 6, 'two members here and one in a child process');
    const held = view.of('c');
    const rebalances = inProcess.map((m) => m.assignment!.rebalance);
    first.kill('SIGKILL');
    await once(first, 'exit');
    view.forget('c');
    host();
    await view.until(['a', 'b', 'c'], [2, 2, 2], 6, 'the restarted member back in the group');
    assert.deepEqual(view.of('c'), held, 'the same partitions, kept for its instance id');
    assert.deepEqual(
      inProcess.map((m) => m.assignment!.rebalance),
      rebalances,
      'the other members were not rebalanced',
    );
  });
});

describe('group membership kept by @platformatic/kafka, on a Node release it does not run on', {
  skip: PLATFORMATIC_UNAVAILABLE === false ? `Node ${process.versions.node} runs @platformatic/kafka` : false,
}, () => {
  it('is refused with a coded error that says which Node it needs', async () => {
    await assert.rejects(
      joinGroup({
        brokers: '127.0.0.1:9',
        groupId: 'g',
        topics: ['t'],
        library: '@platformatic/kafka',
        onAssigned: () => {},
      }),
      { code: 'INVALID_ARGUMENT', message: /needs Node 22\.22 or later/ },
    );
  });
});

describe('the Node releases @platformatic/kafka runs on', () => {
  it('are 22.22 and later, as its engines say', () => {
    for (const v of ['20.20.2', '22.0.0', '22.21.9']) assert.notEqual(platformaticUnsupported(v), null, v);
    for (const v of ['22.22.0', '23.1.0', '24.22.3']) assert.equal(platformaticUnsupported(v), null, v);
  });
});
