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

/**
 * Resolves once `check` is true, looking every `everyMs` (default 20); rejects naming `what` once
 * `ms` have passed. Unlike a loop raced by {@link within}, it stops looking when it gives up.
 */
export async function eventually(
  ms: number,
  what: string,
  check: () => boolean | Promise<boolean>,
  everyMs = 20,
): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return;
    if (performance.now() >= deadline) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
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
