import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaSourceSpec } from '../spec.js';
import type { PartitionFeed } from './partition-feed.js';
import type { KafkaReader } from './reader.js';

/**
 * A Kafka source's partitions the brokers no longer have (a deleted topic), found by asking them
 * for every topic's partitions when a request fails for an unknown topic or partition. They fail the
 * query under `failOnDataLoss`, or are read no more and counted.
 */
export class LostPartitions {
  constructor(
    private readonly spec: KafkaSourceSpec,
    private readonly feeds: readonly PartitionFeed[],
    private readonly reader: KafkaReader,
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
    for (const t of new Set(missing.map((f) => f.topic))) {
      if (this.feeds.every((f) => f.topic !== t || f.gone)) this.reader.forget(t);
    }
    this.dropped();
    return true;
  }

  /** Every topic-partition the brokers know now (null when they cannot be asked). */
  private async existingPartitions(): Promise<Set<string> | null> {
    try {
      const out = new Set<string>();
      for (const [topic, partitions] of await this.reader.topicPartitions()) {
        for (const p of partitions) out.add(`${topic}\u0000${p}`);
      }
      return out;
    } catch {
      return null;
    }
  }
}
