import { createRequire } from 'node:module';
import type { ISocketFactory, Kafka } from 'kafkajs';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaClientSettings } from '../../plan/kafka-settings.js';

const require = createRequire(import.meta.url);

type KafkaJs = typeof import('kafkajs');
let loaded: KafkaJs | undefined;

/**
 * kafkajs, loaded on first use: every worker thread loads the connectors, and loading kafkajs
 * takes about 90 ms, which a query without Kafka should not pay on each thread.
 */
export function kafkajs(): KafkaJs {
  loaded ??= require('kafkajs') as KafkaJs;
  return loaded;
}

/** kafkajs' own socket factory (plain TCP or TLS, keep-alive on). */
const defaultSocketFactory = (): ISocketFactory =>
  (require('kafkajs/src/network/socketFactory.js') as () => ISocketFactory)();

// Defined with the plan, which checks the brokers of side outputs too.
export { type Brokers, type KafkaClientSettings, parseBrokers } from '../../plan/kafka-settings.js';

/**
 * A kafkajs client; quiet unless the settings ask for its logs. Its sockets send at once
 * (`TCP_NODELAY`): kafkajs leaves Nagle's algorithm on, which holds a small request back until
 * the previous one is acknowledged, and that costs milliseconds per fetch and produce.
 */
export function kafkaClient(brokers: readonly string[], settings: KafkaClientSettings | undefined): Kafka {
  const factory: ISocketFactory = settings?.socketFactory ?? defaultSocketFactory();
  const { Kafka, logLevel } = kafkajs();
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

type BatchClass = new (topic: string, fetchedOffset: string, partition: FetchedPartition) => KafkaJsBatch;
let batchClass: BatchClass | undefined;

/**
 * A fetched partition through kafkajs' `Batch`, which drops control records and rows of aborted
 * transactions (loaded on first use, as kafkajs is).
 */
export function kafkaBatch(topic: string, fetchedOffset: string, partition: FetchedPartition): KafkaJsBatch {
  batchClass ??= require('kafkajs/src/consumer/batch.js') as BatchClass;
  return new batchClass(topic, fetchedOffset, partition);
}

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
