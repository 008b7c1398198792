import {
  type InternalCluster,
  internalCluster,
  kafkaBatch,
  kafkaClient,
  READ_COMMITTED,
  READ_UNCOMMITTED,
} from './client.js';
import {
  byTopic,
  type KafkaReader,
  type PartitionRef,
  partitionKey,
  type ReaderOptions,
  ReadFailure,
  type ReadPartition,
  type ReadRequest,
} from './reader.js';

/** The metadata request kafkajs' cluster makes (not in its typings). */
interface ClusterMetadata {
  metadata(args: { topics: string[] }): Promise<{
    topicMetadata: { topic: string; isInternal?: boolean; partitionMetadata: { partitionId: number }[] }[];
  }>;
}

/**
 * A Kafka source's reader on kafkajs: its cluster and broker objects (the ones its consumer is
 * built on, see client.ts) fetch from exact offsets; its `Batch` drops transaction markers and
 * rows of aborted transactions.
 */
export class KafkaJsReader implements KafkaReader {
  private readonly cluster: InternalCluster;
  private readonly isolation: number;

  constructor(options: ReaderOptions) {
    this.isolation = options.isolationLevel === 'read_committed' ? READ_COMMITTED : READ_UNCOMMITTED;
    this.cluster = internalCluster(kafkaClient(options.brokers, options.client), this.isolation);
  }

  async connect(topics: readonly string[]): Promise<void> {
    try {
      await this.cluster.connect();
      if (topics.length > 0) await this.cluster.addMultipleTargetTopics([...new Set(topics)]);
    } catch (e) {
      await this.cluster.disconnect().catch(() => {});
      throw classify(e);
    }
  }

  async disconnect(): Promise<void> {
    await this.cluster.disconnect().catch(() => {});
  }

  async refreshMetadata(): Promise<void> {
    await this.cluster.refreshMetadata().catch(() => {});
  }

  forget(topic: string): void {
    // kafkajs keeps asking for the metadata of every topic it was told of; a deleted one would
    // fail each refresh.
    (this.cluster as unknown as { targetTopics?: Set<string> }).targetTopics?.delete(topic);
  }

  async topicPartitions(): Promise<Map<string, number[]>> {
    try {
      const all = (await (this.cluster as unknown as ClusterMetadata).metadata({ topics: [] })).topicMetadata;
      return new Map(
        all
          .filter((t) => t.isInternal !== true)
          .map((t) => [t.topic, t.partitionMetadata.map((p) => p.partitionId).sort((a, b) => a - b)]),
      );
    } catch (e) {
      throw classify(e);
    }
  }

  async fetchTargets(partitions: readonly PartitionRef[]): Promise<Map<string, PartitionRef[]>> {
    const out = new Map<string, PartitionRef[]>();
    try {
      for (const [topic, ps] of byTopic(partitions, (p) => p.partition)) {
        for (const [node, kps] of Object.entries(this.cluster.findLeaderForPartitions(topic, ps))) {
          if (!out.has(node)) out.set(node, []);
          for (const partition of kps) out.get(node)!.push({ topic, partition });
        }
      }
    } catch (e) {
      throw classify(e);
    }
    return out;
  }

  async fetch(
    target: string,
    request: { maxWaitMs: number; maxBytes: number; partitions: readonly ReadRequest[] },
  ): Promise<ReadPartition[]> {
    const topics = new Map<string, { partition: number; fetchOffset: string; maxBytes: number }[]>();
    const from = new Map<string, number>();
    for (const { topic, partition, offset, maxBytes } of request.partitions) {
      if (!topics.has(topic)) topics.set(topic, []);
      topics.get(topic)!.push({ partition, fetchOffset: String(offset), maxBytes });
      from.set(partitionKey(topic, partition), offset);
    }
    let response: Awaited<ReturnType<Awaited<ReturnType<InternalCluster['findBroker']>>['fetch']>>;
    try {
      const broker = await this.cluster.findBroker({ nodeId: target });
      response = await broker.fetch({
        replicaId: -1,
        isolationLevel: this.isolation,
        maxWaitTime: request.maxWaitMs,
        minBytes: 1,
        maxBytes: request.maxBytes,
        topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
      });
    } catch (e) {
      throw classify(e);
    }
    const out: ReadPartition[] = [];
    for (const t of response.responses) {
      const topic = t.topicName;
      for (const part of t.partitions) {
        const offset = from.get(partitionKey(topic, part.partition));
        if (offset === undefined) continue;
        const batch = kafkaBatch(topic, String(offset), part);
        out.push({
          topic,
          partition: part.partition,
          highWatermark: Number(part.highWatermark),
          lastStableOffset: part.lastStableOffset === undefined ? -1 : Number(part.lastStableOffset),
          messages: batch.messages,
          next: batch.isEmptyIncludingFiltered() ? null : Number(batch.lastOffset()) + 1,
        });
      }
    }
    return out;
  }

  async listOffsets(
    partitions: readonly PartitionRef[],
    at: 'earliest' | 'latest',
  ): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    try {
      const res = await this.cluster.fetchTopicsOffset(
        [...byTopic(partitions, ({ partition }) => ({ partition }))].map(([topic, ps]) => ({
          topic,
          partitions: ps,
          fromBeginning: at === 'earliest',
        })),
      );
      for (const t of res)
        for (const p of t.partitions) out.set(partitionKey(t.topic, p.partition), Number(p.offset));
    } catch (e) {
      throw classify(e);
    }
    return out;
  }

  async commitOffsets(
    groupId: string,
    offsets: readonly (PartitionRef & { offset: number })[],
  ): Promise<void> {
    const topics = byTopic(offsets, ({ partition, offset }) => ({ partition, offset: String(offset) }));
    try {
      const coordinator = await this.cluster.findGroupCoordinator({ groupId });
      await coordinator.offsetCommit({
        groupId,
        groupGenerationId: -1,
        memberId: '',
        topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
      });
    } catch (e) {
      throw classify(e);
    }
  }
}

/** A kafkajs error as a {@link ReadFailure}. */
function classify(e: unknown): ReadFailure {
  const err = e as { name?: string; type?: string; topic?: string; partition?: number };
  if (err?.name === 'KafkaJSOffsetOutOfRange' && err.topic !== undefined && err.partition !== undefined) {
    return new ReadFailure('out-of-range', e, { topic: err.topic, partition: err.partition });
  }
  if (err?.type === 'UNKNOWN_TOPIC_OR_PARTITION') return new ReadFailure('unknown-topic', e);
  return new ReadFailure('other', e);
}
