import type { Admin, Kafka } from 'kafkajs';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaSourceSpec } from '../spec.js';
import type { InternalCluster } from './client.js';
import type { PartitionFeed } from './partition-feed.js';

/**
 * A Kafka source's partitions the brokers no longer have (a deleted topic), found by asking them
 * through an admin client when a request fails with `UNKNOWN_TOPIC_OR_PARTITION`. They fail the
 * query under `failOnDataLoss`, or are read no more and counted.
 */
export class LostPartitions {
  private admin: Promise<Admin> | null = null;

  constructor(
    private readonly spec: KafkaSourceSpec,
    private readonly feeds: readonly PartitionFeed[],
    private readonly kafka: Kafka,
    private readonly cluster: () => InternalCluster | null,
    private readonly failed: (e: unknown) => void,
    /** Called once partitions were dropped: `caughtUp` calls may wait for them no more. */
    private readonly dropped: () => void,
  ) {}

  /**
   * Partitions the brokers no longer have (a deleted topic) fail the query under
   * `failOnDataLoss`, or are read no more and counted. False when none is missing.
   */
  async drop(): Promise<boolean> {
    const existing = await this.existingPartitions();
    if (existing === null) return false;
    const missing = this.feeds.filter((f) => !f.gone && !existing.has(`${f.topic}\u0000${f.partition}`));
    if (missing.length === 0) return false;
    const list = missing.map((f) => `${f.topic}-${f.partition}`).join(', ');
    if (this.spec.failOnDataLoss) {
      this.failed(
        new MillraceError(
          ErrorCode.SOURCE_DATA_LOST,
          `${this.spec.description}: ${list} no longer exist${missing.length > 1 ? '' : 's'} (topic deleted?); ` +
            'set failOnDataLoss: false to go on without them',
        ),
      );
      return true;
    }
    for (const f of missing) f.drop();
    // kafkajs keeps asking for the metadata of every topic it was told of; a deleted one would
    // fail each refresh.
    const targets = (this.cluster() as unknown as { targetTopics?: Set<string> }).targetTopics;
    for (const t of new Set(missing.map((f) => f.topic))) {
      if (this.feeds.every((f) => f.topic !== t || f.gone)) targets?.delete(t);
    }
    this.dropped();
    return true;
  }

  /** Closes the admin client, if one was needed. */
  async close(): Promise<void> {
    await (await this.admin?.catch(() => null))?.disconnect().catch(() => {});
  }

  /** Every topic-partition the brokers know now (null when they cannot be asked). */
  private async existingPartitions(): Promise<Set<string> | null> {
    try {
      const admin = await this.adminClient();
      const names = new Set(await admin.listTopics());
      const wanted = [...new Set(this.feeds.map((f) => f.topic))].filter((t) => names.has(t));
      const out = new Set<string>();
      if (wanted.length === 0) return out;
      for (const t of (await admin.fetchTopicMetadata({ topics: wanted })).topics) {
        for (const p of t.partitions) out.add(`${t.name}\u0000${p.partitionId}`);
      }
      return out;
    } catch {
      return null;
    }
  }

  private adminClient(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })();
    return this.admin;
  }
}
