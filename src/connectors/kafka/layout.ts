import { ErrorCode, MillraceError } from '../../errors.js';
import { resolvedLayout } from '../layouts.js';
import type { KafkaSourceSpec } from '../spec.js';
import { readFailed } from './reader.js';
import { kafkaReader } from './readers.js';
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
  const reader = kafkaReader({
    brokers: spec.brokers,
    client: spec.client,
    library: spec.library ?? 'kafkajs',
    isolationLevel: 'read_uncommitted',
  });
  try {
    await reader.connect([]);
    const byName = await reader.topicPartitions();
    let topics: string[];
    if ('pattern' in spec.subscription) {
      const pattern = spec.subscription.pattern;
      topics = [...byName.keys()].filter((t) => !t.startsWith('__') && pattern.test(t)).sort();
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
    for (const topic of topics) for (const id of byName.get(topic)!) partitions.push([topic, id]);
    return partitions;
  } catch (e) {
    if (e instanceof MillraceError) throw e;
    throw readFailed(spec.description, spec.brokers, "cannot read the topics' metadata", e);
  } finally {
    await reader.disconnect();
  }
}
