/** What the in-process group tests share: a test broker fed with payments, and waiting for tasks. */
import { after, before } from 'node:test';
import type { Producer } from 'kafkajs';
import type { GroupQuery } from '../../src/index.js';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { TestBroker } from './broker/index.js';
import { eventsOf, eventually, kafkaClient } from './kafkajs-helpers.js';

/** A test broker, started before the suite's tests and closed after them. */
export interface PaymentsBroker {
  readonly broker: TestBroker;
  /** Payments `produced … produced + n - 1` (amount i, card `card(i)`), to partition `amount % 6` of `in`. */
  produce(n: number): Promise<void>;
  /** How many payments were produced. */
  readonly produced: number;
}

/**
 * Registers, in the suite being declared, a test broker with the six-partition topic `in` and
 * three-partition `outTopics`, and an idempotent producer of payments.
 */
export function paymentsBroker(outTopics: readonly string[], card: (i: number) => string): PaymentsBroker {
  let broker: TestBroker | undefined;
  let producer: Producer | undefined;
  let produced = 0;
  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
    broker.createTopic('in', 6);
    for (const out of outTopics) broker.createTopic(out, 3);
    producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
    await producer.connect();
  });
  after(async () => {
    await producer?.disconnect();
    await broker?.close();
  });
  return {
    get broker() {
      if (broker === undefined) throw new Error('the broker starts before the tests');
      return broker;
    },
    get produced() {
      return produced;
    },
    async produce(n: number) {
      const batch: Payment[] = Array.from({ length: n }, (_, j) => ({
        card: card(produced + j),
        amount: produced + j,
        ts: 1_000_000 + produced + j,
      }));
      produced += n;
      await producer!.send({
        topic: 'in',
        messages: batch.map((p) => ({ key: p.card, value: JSON.stringify(p), partition: p.amount % 6 })),
      });
    },
  };
}

/** The tasks a member runs now, sorted. */
export const runningTasks = (m: GroupQuery): string[] =>
  m.tasks
    .filter((t) => t.state === 'running')
    .map((t) => t.task)
    .sort();

/** A change in any member's tasks. */
export const taskEvents = (members: readonly GroupQuery[]) =>
  eventsOf(members, ['assigned', 'taskStarted', 'taskStopped']);

/** Resolves once every member runs as many tasks as `each` says; `check` runs at each look. */
export const untilRunning = (
  members: readonly GroupQuery[],
  each: readonly number[],
  timeoutMs: number,
  check: () => void = () => {},
) =>
  eventually(
    timeoutMs,
    `tasks running ${each.join('/')}`,
    () => {
      check();
      return members.every((m, i) => runningTasks(m).length === each[i]);
    },
    taskEvents(members),
  );
