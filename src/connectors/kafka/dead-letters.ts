import type { Producer } from 'kafkajs';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaSourceSpec } from '../spec.js';
import { kafkaClient } from './client.js';
import type { RawKafkaRecord } from './source.js';

/**
 * A Kafka source task's dead-letter topic: records it cannot decode are produced there as they
 * were read (key, value, headers), with two more headers, `millrace.error` and `millrace.source`
 * (`topic-partition@offset`). The task waits for each write to be acknowledged before it reads on,
 * so an epoch never commits ahead of its dead letters: none is lost (a retried write may repeat
 * one: at-least-once).
 */
export class KafkaDeadLetterWriter {
  private producer: Promise<Producer> | null = null;

  constructor(private readonly spec: KafkaSourceSpec & { deadLetterTopic: string }) {}

  write(raw: RawKafkaRecord, error: unknown): Promise<void> {
    this.producer ??= (async () => {
      const producer = kafkaClient(this.spec.brokers, this.spec.client).producer({
        allowAutoTopicCreation: false,
      });
      await producer.connect();
      return producer;
    })();
    const bytes = (b: Uint8Array | null) =>
      b === null ? null : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    return this.producer
      .then((p) =>
        p.send({
          topic: this.spec.deadLetterTopic,
          acks: -1,
          messages: [
            {
              key: bytes(raw.key),
              value: bytes(raw.value),
              headers: {
                ...raw.headers,
                'millrace.error': (error as Error)?.message ?? String(error),
                'millrace.source': `${raw.topic}-${raw.partition}@${raw.offset}`,
              },
            },
          ],
        }),
      )
      .then(
        () => undefined,
        (e: unknown) => {
          throw new MillraceError(
            ErrorCode.TASK_FAILED,
            `${this.spec.description}: cannot write to the dead-letter topic '${this.spec.deadLetterTopic}': ${(e as Error).message}`,
            { cause: e },
          );
        },
      );
  }

  async close(): Promise<void> {
    const producer = this.producer;
    this.producer = null;
    await (await producer?.catch(() => null))?.disconnect().catch(() => {});
  }
}
