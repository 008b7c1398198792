import { createRequire } from 'node:module';
import { type ISocketFactory, Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';

const require = createRequire(import.meta.url);

/** kafkajs' own socket factory (plain TCP or TLS, keep-alive on). */
const defaultSocketFactory = require('kafkajs/src/network/socketFactory.js') as () => ISocketFactory;

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

/**
 * A kafkajs client; quiet unless the settings ask for its logs. Its sockets send at once
 * (`TCP_NODELAY`): kafkajs leaves Nagle's algorithm on, which holds a small request back until
 * the previous one is acknowledged, and that costs milliseconds per fetch and produce.
 */
export function kafkaClient(brokers: readonly string[], settings: KafkaClientSettings | undefined): Kafka {
  const factory: ISocketFactory = settings?.socketFactory ?? defaultSocketFactory();
  return new Kafka({
    clientId: 'millrace',
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    ...settings,
    brokers: [...brokers],
    socketFactory: (args) => {
      const socket = factory(args);
      socket.setNoDelay(true);
      return socket;
    },
  });
}

// --- kafkajs internals -------------------------------------------------------------------------
// The source reads each partition from an exact offset, which kafkajs' group consumer cannot do
// (it has no manual assignment). kafkajs' own cluster and broker objects can: they are what its
// consumer is built on. Their shape is stable across kafkajs 2.x; a missing method fails clearly.

export interface FetchedMessage {
  readonly offset: string;
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Record<string, Buffer | Buffer[] | undefined>;
  readonly isControlRecord?: boolean;
}

export interface FetchedPartition {
  readonly partition: number;
  readonly errorCode: number;
  readonly highWatermark: string;
  readonly lastStableOffset?: string;
  readonly abortedTransactions?: readonly unknown[];
  readonly messages: readonly FetchedMessage[];
}

export interface FetchResponse {
  readonly responses: readonly { topicName: string; partitions: readonly FetchedPartition[] }[];
}

export interface InternalBroker {
  fetch(request: {
    replicaId?: number;
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<FetchResponse>;
  offsetCommit(request: {
    groupId: string;
    groupGenerationId: number;
    memberId: string;
    topics: { topic: string; partitions: { partition: number; offset: string }[] }[];
  }): Promise<unknown>;
}

export interface InternalCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  refreshMetadata(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number; leader: number }[];
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(args: { nodeId: string | number }): Promise<InternalBroker>;
  findGroupCoordinator(args: { groupId: string }): Promise<InternalBroker>;
  fetchTopicsOffset(
    topics: { topic: string; partitions: { partition: number }[]; fromBeginning: boolean }[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

interface KafkaJsBatch {
  readonly messages: readonly FetchedMessage[];
  isEmptyIncludingFiltered(): boolean;
  lastOffset(): string;
}

/** kafkajs' `Batch`: drops control records and rows of aborted transactions from a fetch. */
export const Batch = require('kafkajs/src/consumer/batch.js') as new (
  topic: string,
  fetchedOffset: string,
  partition: FetchedPartition,
) => KafkaJsBatch;

/** Isolation levels of the Fetch and ListOffsets requests. */
export const READ_UNCOMMITTED = 0;
export const READ_COMMITTED = 1;

/** A cluster connection built with the client's settings (see the note above). */
export function internalCluster(kafka: Kafka, isolationLevel: number): InternalCluster {
  const create = Object.getOwnPropertySymbols(kafka).find(
    (s) => s.description === 'private:Kafka:createCluster',
  );
  const factory = create === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[create];
  if (typeof factory !== 'function') {
    throw new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      'sources.kafka: this version of kafkajs does not expose its cluster client (kafkajs 2.x is required)',
    );
  }
  return factory({ allowAutoTopicCreation: false, isolationLevel }) as InternalCluster;
}
