/** kafkajs plumbing shared by the Kafka tests: quiet clients and bounded "consume until" helpers. */
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import { kafkaClient as connectorClient } from '../../src/connectors/kafka/client.js';

/** A kafkajs client for `bootstrap` as the connectors make one (quiet, TCP_NODELAY), with quick, bounded retries. */
export function kafkaClient(bootstrap: string, clientId = 'millrace-test'): Kafka {
  return connectorClient([bootstrap], {
    clientId,
    retry: { initialRetryTime: 50, maxRetryTime: 500, retries: 10 },
  });
}

/** Calls `changed` whenever something a test waits on may have changed; returns how to stop. */
export type Subscribe = (changed: () => void) => () => void;

/** Every change any of `subscriptions` sees. */
export const anyOf =
  (...subscriptions: Subscribe[]): Subscribe =>
  (changed) => {
    const stops = subscriptions.map((s) => s(changed));
    return () => {
      for (const stop of stops) stop();
    };
  };

/** A change: an event of any of `names` on any of `emitters`. */
export const eventsOf =
  (
    emitters: readonly { on(n: string, f: () => void): unknown; off(n: string, f: () => void): unknown }[],
    names: readonly string[],
  ): Subscribe =>
  (changed) => {
    for (const e of emitters) for (const n of names) e.on(n, changed);
    return () => {
      for (const e of emitters) for (const n of names) e.off(n, changed);
    };
  };

/**
 * Resolves once `check` is true; looks again each time `subscribe` reports a change (one that
 * came while a look was under way counts), never on a timer. Rejects naming `what` once `ms` have
 * passed, and then stops looking.
 */
export async function eventually(
  ms: number,
  what: string,
  check: () => boolean | Promise<boolean>,
  subscribe: Subscribe,
): Promise<void> {
  let changedMeanwhile = false;
  const waiting: { wake: (() => void) | null } = { wake: null };
  let gaveUp = false;
  const unsubscribe = subscribe(() => {
    changedMeanwhile = true;
    waiting.wake?.();
  });
  try {
    await within(
      ms,
      what,
      (async () => {
        while (!gaveUp) {
          changedMeanwhile = false;
          if (await check()) return;
          if (!changedMeanwhile) await new Promise<void>((resolve) => (waiting.wake = resolve));
          waiting.wake = null;
        }
      })(),
    );
  } finally {
    gaveUp = true;
    unsubscribe();
    waiting.wake?.();
  }
}

/** Rejects with a message naming `what` if `promise` has not settled within `ms`. */
export function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface ConsumeOptions {
  groupId: string;
  topic: string;
  /** Stop once a message with this value has been received. */
  untilValue: string;
  readUncommitted?: boolean;
  maxWaitTimeInMs?: number;
  /** Called with the running consumer before any message arrives. */
  onStart?: (consumer: Consumer) => void;
}

/** Runs a group consumer from the beginning of `topic` until `untilValue` arrives; returns the values. */
export async function consumeUntil(kafka: Kafka, options: ConsumeOptions): Promise<string[]> {
  const consumer = kafka.consumer({
    groupId: options.groupId,
    readUncommitted: options.readUncommitted ?? false,
    maxWaitTimeInMs: options.maxWaitTimeInMs ?? 100,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: options.topic, fromBeginning: true });
    const values: string[] = [];
    await within(
      20_000,
      `consuming ${options.topic} until ${options.untilValue}`,
      new Promise<void>((resolve, reject) => {
        options.onStart?.(consumer);
        consumer
          .run({
            eachMessage: async ({ message }: { message: KafkaMessage }) => {
              const value = message.value?.toString() ?? '';
              values.push(value);
              if (value === options.untilValue) resolve();
            },
          })
          .catch(reject);
      }),
    );
    return values;
  } finally {
    await consumer.disconnect();
  }
}
