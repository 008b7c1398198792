/** The Kafka connector's types that its spec (`../spec.ts`) names; this file imports nothing. */

/** How a key or value is read from, or written to, Kafka's bytes. */
export type KafkaEncoding = 'json' | 'string' | 'buffer' | 'msgpack';

/** A user decoder: bytes (null for a null key or tombstone) to the row's field. */
export type KafkaDecoder = (bytes: Buffer | null) => unknown;

/** A user encoder: the row's field to bytes or text (null for none). */
export type KafkaEncoder = (value: unknown) => Buffer | string | null;

/** A named encoding or a user function (a decoder for sources, an encoder for sinks). */
export type KafkaCodec = KafkaEncoding | ((value: never) => unknown);

/** The Kafka client libraries a source reads with (`sources.kafka({ library })`). */
export type KafkaLibrary = 'kafkajs' | '@platformatic/kafka';

/** A Kafka partition a source partition reads: `[topic, partition]`. */
export type TopicPartition = readonly [string, number];

/** Which topics a source reads. */
export type KafkaSubscription = { readonly topics: readonly string[] } | { readonly pattern: RegExp };

/** kafkajs' custom partitioner: given the topic's partitions and the message, a partition. */
export type KafkaPartitioner = (args: {
  topic: string;
  partitionMetadata: { partitionId: number; leader: number }[];
  message: { key?: Buffer | string | null; value: Buffer | string | null; partition?: number };
}) => number;

/** A record as the driver reads it: key and value still bytes. */
export interface RawKafkaRecord {
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly headers: Record<string, string>;
}
