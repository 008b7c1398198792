import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaSourceSpec, SourceSpec } from '../spec.js';
import { internalCluster, kafkaClient, READ_UNCOMMITTED } from './client.js';

/** A Kafka partition a source partition reads: `[topic, partition]`. */
export type TopicPartition = readonly [string, number];

/** Which topics a source reads. */
export type KafkaSubscription = { readonly topics: readonly string[] } | { readonly pattern: RegExp };

/**
 * The topic-partitions of each Kafka source, by {@link layoutKey}, while a job is being built.
 *
 * A plan needs every source's partition count, and a Kafka source learns it from the brokers. So
 * the driver builds the job once, asks the brokers ({@link resolveKafkaLayouts}), and builds it
 * again inside {@link withKafkaLayouts}; each worker builds it inside the same layouts, handed over
 * in its start message, so every thread plans the same partitions. Outside a build the map is
 * empty: nothing here outlives the synchronous build it serves.
 */
const layouts = new Map<string, readonly TopicPartition[]>();

export function layoutKey(brokers: readonly string[], subscription: KafkaSubscription): string {
  const topics =
    'pattern' in subscription
      ? `/${subscription.pattern.source}/${subscription.pattern.flags}`
      : subscription.topics;
  return JSON.stringify([brokers, topics]);
}

/** The layout of the build under way, if the driver resolved it. */
export function resolvedLayout(key: string): readonly TopicPartition[] | undefined {
  return layouts.get(key);
}

/** Runs a (synchronous) build with these layouts in force. */
export function withKafkaLayouts<R>(
  resolved: Readonly<Record<string, readonly TopicPartition[]>>,
  build: () => R,
): R {
  for (const [k, v] of Object.entries(resolved)) layouts.set(k, v);
  try {
    return build();
  } finally {
    layouts.clear();
  }
}

/** The Kafka sources of a plan whose partitions are not resolved yet. */
export function unresolvedKafkaSources(sources: readonly { spec: SourceSpec }[]): KafkaSourceSpec[] {
  return sources
    .map((s) => s.spec)
    .filter((s): s is KafkaSourceSpec => s.kind === 'kafka' && s.topicPartitions === undefined);
}

/**
 * Asks the brokers for the partitions of each source's topics: sorted by topic, then partition,
 * so the same topics always give the same source partitions.
 */
export async function resolveKafkaLayouts(
  specs: readonly KafkaSourceSpec[],
): Promise<Record<string, readonly TopicPartition[]>> {
  const out: Record<string, readonly TopicPartition[]> = {};
  for (const spec of specs) {
    if (out[spec.layoutKey] !== undefined) continue;
    out[spec.layoutKey] = await resolveOne(spec);
  }
  return out;
}

async function resolveOne(spec: KafkaSourceSpec): Promise<TopicPartition[]> {
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
