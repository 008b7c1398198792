import { ErrorCode, MillraceError } from '../../errors.js';
import { resolvedLayout } from '../layouts.js';
import type { KafkaSourceSpec } from '../spec.js';
import { internalCluster, kafkaClient, READ_UNCOMMITTED } from './client.js';
import type { KafkaSubscription, TopicPartition } from './types.js';

export type { KafkaSubscription, TopicPartition } from './types.js';

export function layoutKey(brokers: readonly string[], subscription: KafkaSubscription): string {
  const topics =
    'pattern' in subscription
      ? `/${subscription.pattern.source}/${subscription.pattern.flags}`
      : subscription.topics;
  return JSON.stringify([brokers, topics]);
}

/** The topic-partitions the driver resolved for this subscription, in the build under way. */
export function kafkaLayout(key: string): readonly TopicPartition[] | undefined {
  return resolvedLayout(key) as readonly TopicPartition[] | undefined;
}

/**
 * Asks the brokers for the partitions of the source's topics: sorted by topic, then partition, so
 * the same topics always give the same source partitions.
 */
export async function resolveKafkaLayout(spec: KafkaSourceSpec): Promise<TopicPartition[]> {
  const cluster = internalCluster(kafkaClient(spec.brokers, spec.client), READ_UNCOMMITTED);
  try {
    await cluster.connect();
    const all = (await (cluster as unknown as ClusterMetadata).metadata({ topics: [] })).topicMetadata;
    const byName = new Map(all.map((t) => [t.topic, t]));
    let topics: string[];
    if ('pattern' in spec.subscription) {
      const pattern = spec.subscription.pattern;
      topics = all
        .map((t) => t.topic)
        .filter((t) => !t.startsWith('__') && pattern.test(t))
        .sort();
      if (topics.length === 0) {
        throw new MillraceError(
          ErrorCode.SOURCE_READ_FAILED,
          `${spec.description}: no topic matches ${pattern} on ${spec.brokers.join(',')}`,
        );
      }
    } else {
      topics = [...spec.subscription.topics];
      const missing = topics.filter((t) => !byName.has(t));
      if (missing.length > 0) {
        throw new MillraceError(
          ErrorCode.SOURCE_READ_FAILED,
          `${spec.description}: topic${missing.length > 1 ? 's' : ''} ${missing.map((t) => `'${t}'`).join(', ')} ` +
            `not found on ${spec.brokers.join(',')}; create ${missing.length > 1 ? 'them' : 'it'} first`,
        );
      }
    }
    const partitions: TopicPartition[] = [];
    for (const topic of topics) {
      const ids = byName
        .get(topic)!
        .partitionMetadata.map((p) => p.partitionId)
        .sort((a, b) => a - b);
      for (const id of ids) partitions.push([topic, id]);
    }
    return partitions;
  } catch (e) {
    if (e instanceof MillraceError) throw e;
    throw new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `${spec.description}: cannot read the topics' metadata from ${spec.brokers.join(',')}: ${(e as Error).message}`,
      { cause: e },
    );
  } finally {
    await cluster.disconnect().catch(() => {});
  }
}

interface ClusterMetadata {
  metadata(args: { topics: string[] }): Promise<{
    topicMetadata: { topic: string; partitionMetadata: { partitionId: number }[] }[];
  }>;
}
