import { invalidArgument } from '../../errors.js';
import type { KafkaSinkSpec } from '../spec.js';
import { checkPositiveInt } from '../validate.js';
import { type Brokers, type KafkaClientSettings, parseBrokers } from './client.js';
import { checkEncoding, type KafkaEncoder, type KafkaEncoding } from './codec.js';

/** What a row written to `sinks.kafka` may hold; a row without `value` is the value itself. */
export interface KafkaOutputRow {
  key?: unknown;
  value: unknown;
  headers?: Record<string, string | Buffer>;
  topic?: string;
  partition?: number;
}

import type { KafkaPartitioner } from './types.js';

export type { KafkaPartitioner };

export interface KafkaSinkOptions {
  brokers: Brokers;
  /** The topic rows go to, unless a row names its own (`topic`). */
  topic?: string;
  /** How `value` is encoded (default `'json'`: an object as JSON, a string as it is). */
  value?: KafkaEncoding | KafkaEncoder;
  /** How `key` is encoded (default `'string'`). */
  key?: KafkaEncoding | KafkaEncoder;
  /**
   * `'default'` (Java-compatible murmur2 of the key, as Kafka's own clients), `'legacy'` (kafkajs
   * 1.x), or a function. A row's own `partition` wins.
   */
  partitioner?: 'default' | 'legacy' | KafkaPartitioner;
  /**
   * Writes each epoch of each sink partition in a Kafka transaction committed at the epoch's end,
   * so that `read_committed` readers see every row once, even across crashes (default false:
   * at-least-once).
   */
  exactlyOnce?: boolean;
  /** At-least-once mode: use the idempotent producer (default true; no duplicates from retries). */
  idempotent?: boolean;
  /** Prefix of the transactional ids (default `millrace-<query id>`); one id per sink partition. */
  transactionalIdPrefix?: string;
  /** Transaction timeout (default 60 s); must exceed the checkpoint interval. */
  transactionTimeoutMs?: number;
  /** `'none'` (default) or `'gzip'`. */
  compression?: 'none' | 'gzip';
  /**
   * Each record's timestamp: `'write'` (default) the time it is written; `'source'` the time its
   * source row came in, so that a query reading the topic measures latency from the first source
   * (a chain of jobs, or the stages of a group's plan), and time-based retention counts from there.
   */
  timestamp?: 'write' | 'source';
  /** Rows a sink partition keeps waiting for the brokers before it stops taking more (default 10 000). */
  maxBufferedRows?: number;
  /** kafkajs client settings: clientId, ssl, sasl, connectionTimeout, requestTimeout, retry, ... */
  client?: KafkaClientSettings;
}

/**
 * Rows to Kafka. Each sink partition has its own producer, sending as soon as the previous send
 * came back (no waiting for a full batch: rows that arrive during a send go in the next one). An
 * epoch is acknowledged once all its rows are acknowledged by the brokers (`acks: all`), so a
 * committed epoch's rows are in Kafka: at-least-once. With `exactlyOnce`, see the option.
 *
 * @example
 * .writeStream(sinks.kafka({ brokers: 'localhost:9092', topic: 'alerts', exactlyOnce: true }))
 */
export function kafkaSink(options: KafkaSinkOptions): KafkaSinkSpec {
  const what = 'sinks.kafka';
  if (options === null || typeof options !== 'object') throw invalidArgument(`${what}: options are required`);
  const brokers = parseBrokers(what, options.brokers);
  if (options.topic !== undefined && (typeof options.topic !== 'string' || options.topic === '')) {
    throw invalidArgument(`${what}: topic must be a non-empty string`);
  }
  const exactlyOnce = options.exactlyOnce ?? false;
  if (typeof exactlyOnce !== 'boolean') throw invalidArgument(`${what}: exactlyOnce must be a boolean`);
  if (exactlyOnce && options.topic === undefined) {
    throw invalidArgument(
      `${what}: exactlyOnce needs a topic (each sink partition records the epochs it committed as offsets of that topic's partition 0, in its transactions)`,
    );
  }
  const partitioner = options.partitioner ?? 'default';
  if (partitioner !== 'default' && partitioner !== 'legacy' && typeof partitioner !== 'function') {
    throw invalidArgument(`${what}: partitioner must be 'default', 'legacy' or a function`);
  }
  const compression = options.compression ?? 'none';
  if (compression !== 'none' && compression !== 'gzip') {
    throw invalidArgument(`${what}: compression must be 'none' or 'gzip'`);
  }
  const timestamp = options.timestamp ?? 'write';
  if (timestamp !== 'write' && timestamp !== 'source') {
    throw invalidArgument(`${what}: timestamp must be 'write' or 'source'`);
  }
  const prefix = options.transactionalIdPrefix;
  if (prefix !== undefined && (typeof prefix !== 'string' || prefix === '')) {
    throw invalidArgument(`${what}: transactionalIdPrefix must be a non-empty string`);
  }
  return Object.freeze({
    kind: 'kafka',
    description: `KafkaSink[${options.topic ?? 'topic per row'}${exactlyOnce ? ', exactly-once' : ''}]`,
    supportedModes: ['append', 'update', 'complete'] as const,
    brokers,
    topic: options.topic,
    valueEncoding: checkEncoding(`${what}: value`, options.value, 'json'),
    keyEncoding: checkEncoding(`${what}: key`, options.key, 'string'),
    partitioner,
    exactlyOnce,
    idempotent: options.idempotent ?? true,
    transactionalIdPrefix: prefix,
    transactionTimeoutMs: checkPositiveInt(
      `${what}: transactionTimeoutMs`,
      options.transactionTimeoutMs ?? 60_000,
    ),
    compression,
    timestamp,
    maxBufferedRows: checkPositiveInt(`${what}: maxBufferedRows`, options.maxBufferedRows ?? 10_000),
    client: options.client,
  });
}
