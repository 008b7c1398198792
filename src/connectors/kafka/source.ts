import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import { type Duration, parseDuration } from '../../util/duration.js';
import type { KafkaSourceSpec, KafkaStartingOffsets } from '../spec.js';
import { checkName, checkPositiveInt } from '../validate.js';
import { type Brokers, type KafkaClientSettings, parseBrokers } from './client.js';
import {
  checkEncoding,
  decodeBytes,
  type KafkaCodec,
  type KafkaDecoder,
  type KafkaEncoding,
} from './codec.js';
import { kafkaLayout, layoutKey } from './layout.js';
import { platformaticSettings } from './platformatic-reader.js';
import { checkLibrary } from './readers.js';
import type { KafkaLibrary } from './types.js';

/** A row of a Kafka source: the record, with its key and value decoded. */
export interface KafkaRow<V = unknown, K = unknown> {
  key: K;
  value: V;
  topic: string;
  partition: number;
  offset: number;
  /** The record's timestamp (ms since the epoch). */
  timestamp: number;
  /** Header values as UTF-8 text. */
  headers: Record<string, string>;
}

export interface KafkaSourceOptions {
  /** `'host:port,host:port'` or a list. */
  brokers: Brokers;
  /** One topic, several, or every topic whose name matches a pattern (exactly one of the three). */
  topic?: string;
  topics?: string[];
  topicPattern?: RegExp | string;
  name?: string;
  /**
   * Where a query without a checkpoint (or whose checkpoint has no committed epoch) starts:
   * `'latest'` (default), `'earliest'`, or per partition `{ topic: { partition: offset } }` with
   * −2 for earliest and −1 for latest (partitions not listed start at latest).
   */
  startingOffsets?: 'earliest' | 'latest' | Record<string, Record<string, number>>;
  /** Micro-batch mode: at most this many offsets per batch over all partitions. */
  maxOffsetsPerTrigger?: number;
  /**
   * When offsets the checkpoint needs no longer exist (deleted by retention, topic deleted):
   * `true` (default) fails the query with `SOURCE_DATA_LOST`; `false` skips them, counts them in
   * progress, and goes on.
   */
  failOnDataLoss?: boolean;
  /** How values are decoded (default `'json'`); a function gets the bytes (null for a tombstone). */
  value?: KafkaEncoding | KafkaDecoder;
  /** How keys are decoded (default `'string'`). */
  key?: KafkaEncoding | KafkaDecoder;
  /** Rows are the decoded values themselves instead of `{ key, value, topic, ... }` records. */
  valueOnly?: boolean;
  /** `'read_committed'` (default): rows of aborted transactions are never read. */
  isolationLevel?: 'read_committed' | 'read_uncommitted';
  /**
   * Also commit each committed epoch's offsets to this consumer group, for lag monitoring outside
   * Millrace. The query never reads them: its offsets live in its checkpoint.
   */
  groupId?: string;
  /** Records that cannot be decoded go to this topic (under the query's `onBadRecord: 'deadLetter'`). */
  deadLetterTopic?: string;
  /** A fetch waits at most this long for data (default 100 ms; it returns as soon as data arrives). */
  fetchMaxWait?: Duration;
  /** Bytes a fetch asks for per partition (default 1 MiB). */
  fetchMaxBytes?: number;
  /** kafkajs client settings: clientId, ssl, sasl, connectionTimeout, requestTimeout, retry, ... */
  client?: KafkaClientSettings;
  /**
   * The client library the driver reads with: `'kafkajs'` (default) or `'@platformatic/kafka'`
   * (Node 22.22 and later). `client`'s clientId, ssl, sasl (plain, scram), connectionTimeout and
   * requestTimeout apply to both.
   */
  library?: KafkaLibrary;
}

/**
 * Records from Kafka topics. Each Kafka partition is a source partition; offsets are Kafka
 * offsets and live in the query's checkpoint, so a restart resumes from them exactly, whatever
 * any consumer group says. Rows are `{ key, value, topic, partition, offset, timestamp, headers }`,
 * and end-to-end latency is measured from the record's timestamp.
 *
 * @example
 * job.readStream(sources.kafka<Payment>({ name: 'payments', brokers: 'localhost:9092',
 *   topic: 'payments', value: 'json', startingOffsets: 'earliest' }))
 */
export function kafkaSource<V = unknown>(
  options: KafkaSourceOptions & { valueOnly: true },
): KafkaSourceSpec<V>;
export function kafkaSource<V = unknown, K = string>(
  options: KafkaSourceOptions,
): KafkaSourceSpec<KafkaRow<V, K>>;
export function kafkaSource<V = unknown, K = string>(
  options: KafkaSourceOptions,
): KafkaSourceSpec<KafkaRow<V, K>> | KafkaSourceSpec<V> {
  const what = 'sources.kafka';
  if (options === null || typeof options !== 'object') throw invalidArgument(`${what}: options are required`);
  const brokers = parseBrokers(what, options.brokers);
  const given = [options.topic, options.topics, options.topicPattern].filter((t) => t !== undefined);
  if (given.length !== 1) {
    throw invalidArgument(`${what}: give exactly one of topic, topics or topicPattern`);
  }
  let topics: string[] | undefined;
  let pattern: RegExp | undefined;
  if (options.topicPattern !== undefined) {
    const p = options.topicPattern;
    if (!(p instanceof RegExp) && typeof p !== 'string') {
      throw invalidArgument(`${what}: topicPattern must be a RegExp or a string`);
    }
    pattern = typeof p === 'string' ? new RegExp(`^(?:${p})$`) : p;
  } else {
    topics = options.topic !== undefined ? [options.topic] : options.topics;
    if (
      !Array.isArray(topics) ||
      topics.length === 0 ||
      topics.some((t) => typeof t !== 'string' || t === '')
    ) {
      throw invalidArgument(`${what}: topic names must be non-empty strings, got ${JSON.stringify(topics)}`);
    }
    topics = [...new Set(topics)].sort();
  }
  const name = checkName(what, options.name, false);
  const startingOffsets = checkStartingOffsets(what, options.startingOffsets);
  const valueEncoding = checkEncoding(`${what}: value`, options.value, 'json');
  const keyEncoding = checkEncoding(`${what}: key`, options.key, 'string');
  const isolation = options.isolationLevel ?? 'read_committed';
  if (isolation !== 'read_committed' && isolation !== 'read_uncommitted') {
    throw invalidArgument(`${what}: isolationLevel must be 'read_committed' or 'read_uncommitted'`);
  }
  const failOnDataLoss = options.failOnDataLoss ?? true;
  if (typeof failOnDataLoss !== 'boolean') throw invalidArgument(`${what}: failOnDataLoss must be a boolean`);
  const fetchMaxWaitMs = parseDuration(options.fetchMaxWait ?? 100, `${what}: fetchMaxWait`);
  const fetchMaxBytes = checkPositiveInt(`${what}: fetchMaxBytes`, options.fetchMaxBytes ?? 1 << 20);
  for (const [k, v] of [
    ['groupId', options.groupId],
    ['deadLetterTopic', options.deadLetterTopic],
  ] as const) {
    if (v !== undefined && (typeof v !== 'string' || v === '')) {
      throw invalidArgument(`${what}: ${k} must be a non-empty string`);
    }
  }
  const library = checkLibrary(what, options.library);
  if (library === '@platformatic/kafka') platformaticSettings(what, options.client);
  const valueOnly = options.valueOnly === true;
  const subscription = pattern !== undefined ? { pattern } : { topics: topics! };
  const key = layoutKey(brokers, subscription);
  const topicPartitions = kafkaLayout(key);
  const label = pattern !== undefined ? `/${pattern.source}/` : topics!.join(',');
  return Object.freeze({
    kind: 'kafka',
    name,
    partitions: topicPartitions?.length ?? 1,
    topicPartitions,
    layoutKey: key,
    brokers,
    subscription,
    startingOffsets,
    failOnDataLoss,
    isolationLevel: isolation,
    valueOnly,
    groupId: options.groupId,
    deadLetterTopic: options.deadLetterTopic,
    fetchMaxWaitMs,
    fetchMaxBytes,
    client: options.client,
    ...(library === 'kafkajs' ? {} : { library }),
    maxRowsPerTrigger:
      options.maxOffsetsPerTrigger === undefined
        ? undefined
        : checkPositiveInt(`${what}: maxOffsetsPerTrigger`, options.maxOffsetsPerTrigger),
    description: `KafkaSource[${label}]`,
    decode: (raw: RawKafkaRecord): unknown => {
      const value = decodeField(raw, raw.value, valueEncoding, 'value');
      if (valueOnly) return value;
      return {
        key: decodeField(raw, raw.key, keyEncoding, 'key'),
        value,
        topic: raw.topic,
        partition: raw.partition,
        offset: raw.offset,
        timestamp: raw.timestamp,
        headers: raw.headers,
      };
    },
  }) as KafkaSourceSpec<KafkaRow<V, K>>;
}

import type { RawKafkaRecord } from './types.js';

export type { RawKafkaRecord };

function decodeField(
  raw: RawKafkaRecord,
  bytes: Uint8Array | null,
  encoding: KafkaCodec,
  field: string,
): unknown {
  try {
    return decodeBytes(bytes, encoding);
  } catch (e) {
    const how = typeof encoding === 'function' ? 'its decoder' : encoding;
    throw new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `cannot decode the ${field} of the Kafka record at ${raw.topic}-${raw.partition} offset ${raw.offset} (${how}): ${(e as Error).message}`,
      { cause: e },
    );
  }
}

function checkStartingOffsets(what: string, value: unknown): KafkaStartingOffsets {
  if (value === undefined || value === 'latest') return 'latest';
  if (value === 'earliest') return 'earliest';
  const parsed = typeof value === 'string' ? safeJson(value) : value;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidArgument(
      `${what}: startingOffsets must be 'earliest', 'latest' or { topic: { partition: offset } }, got ${JSON.stringify(value)}`,
    );
  }
  const out: Record<string, Record<string, number>> = {};
  for (const [topic, parts] of Object.entries(parsed as Record<string, unknown>)) {
    if (parts === null || typeof parts !== 'object') {
      throw invalidArgument(`${what}: startingOffsets.${topic} must map partitions to offsets`);
    }
    out[topic] = {};
    for (const [p, o] of Object.entries(parts as Record<string, unknown>)) {
      if (!/^\d+$/.test(p) || typeof o !== 'number' || !Number.isInteger(o) || o < -2) {
        throw invalidArgument(
          `${what}: startingOffsets.${topic}.${p} must be an offset (−2 earliest, −1 latest), got ${JSON.stringify(o)}`,
        );
      }
      out[topic]![p] = o;
    }
  }
  return Object.freeze(out);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
