/**
 * How a job names Kafka brokers and client settings, in its sources, sinks and side outputs:
 * checked while the job is built, then handed to the Kafka connectors.
 */
import type { KafkaConfig } from 'kafkajs';
import { invalidArgument } from '../errors.js';

/** kafkajs client settings a source or sink passes through (everything but the brokers). */
export type KafkaClientSettings = Omit<KafkaConfig, 'brokers'>;

/** Brokers as `'host:port,host:port'` or a list. */
export type Brokers = string | readonly string[];

export function parseBrokers(what: string, brokers: unknown): string[] {
  const list =
    typeof brokers === 'string'
      ? brokers.split(',').map((b) => b.trim())
      : Array.isArray(brokers)
        ? brokers.map((b) => (typeof b === 'string' ? b.trim() : ''))
        : [];
  if (list.length === 0 || list.some((b) => !/^\S+:\d+$/.test(b))) {
    throw invalidArgument(
      `${what}: brokers must be 'host:port' or a list of them (e.g. '127.0.0.1:9092'), got ${JSON.stringify(brokers)}`,
    );
  }
  return list;
}
