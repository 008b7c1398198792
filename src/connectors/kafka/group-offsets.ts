import type { TopicPartition } from './layout.js';
import type { KafkaReader } from './reader.js';

/**
 * Commits a Kafka source's committed offsets to a consumer group (`groupId`), for lag monitoring
 * with the usual tools; the query itself never reads them (its offsets live in its checkpoint).
 *
 * Commits are plain OffsetCommit requests outside any group generation: no member joins the group,
 * as Kafka allows for a group without members. One runs at a time; offsets of a newer epoch
 * replace ones still waiting. A failed commit is not retried: the next epoch's commit carries on.
 */
export class GroupOffsets {
  private waiting: readonly number[] | null = null;
  private committing: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly groupId: string,
    private readonly partitions: readonly TopicPartition[],
    private readonly reader: () => KafkaReader | null,
  ) {}

  /** An epoch committed with the source at these offsets (per source partition). */
  commit(offsets: readonly number[]): void {
    if (this.closed) return;
    this.waiting = offsets;
    if (this.committing !== null) return;
    this.committing = this.drain().finally(() => {
      this.committing = null;
    });
  }

  /** Takes no more offsets; resolves once the commit under way (and any waiting one) is done. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.committing !== null) await this.committing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting !== null) {
        const offsets = this.waiting;
        this.waiting = null;
        const reader = this.reader();
        if (reader === null) return;
        await reader.commitOffsets(
          this.groupId,
          this.partitions.map(([topic, partition], p) => ({ topic, partition, offset: offsets[p] ?? 0 })),
        );
      }
    } catch {
      // Monitoring only: the next committed epoch tries again.
    }
  }
}
