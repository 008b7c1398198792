import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FeedPort } from '../../src/connectors/contract.js';
import type { FetchedMessage } from '../../src/connectors/kafka/client.js';
import { PartitionFeed } from '../../src/connectors/kafka/partition-feed.js';
import type { ReadPartition } from '../../src/connectors/kafka/reader.js';
import type { KafkaSourceSpec } from '../../src/connectors/spec.js';

/** A feed ring that keeps the offsets of the rows sent to it. */
function ring(): FeedPort & { offsets: number[] } {
  const offsets: number[] = [];
  return {
    offsets,
    row: (_row, offset) => {
      offsets.push(offset);
      return true;
    },
    badRecord: () => true,
    check: () => {},
    endEpoch: () => true,
    marker: () => true,
    backlog: () => true,
    publish: () => {},
    blocked: false,
    pendingFrames: 0,
  };
}

const message = (offset: number): FetchedMessage => ({
  offset: String(offset),
  timestamp: '0',
  key: null,
  value: Buffer.from(`v${offset}`),
});

/** A fetch's answer for partition 0 with the records at `offsets`. */
const answer = (offsets: number[]): ReadPartition => ({
  topic: 't',
  partition: 0,
  highWatermark: 10,
  lastStableOffset: -1,
  messages: offsets.map(message),
  next: offsets.length === 0 ? null : offsets[offsets.length - 1]! + 1,
});

describe('a Kafka partition as the driver reads it', () => {
  it('sends no record twice when an answer starts before its position', () => {
    const spec = { description: 'kafka', isolationLevel: 'read_uncommitted', failOnDataLoss: true };
    const sent = ring();
    const feed = new PartitionFeed(spec as unknown as KafkaSourceSpec, 't', 0, sent, () => 0);
    assert.equal(feed.take(answer([0, 1]), true), true);
    assert.equal(feed.position, 2);
    // The answer to a fetch asked for at offset 1 before the first answer was taken (two fetch
    // loops of the partition while its leadership moved), then one that overlaps.
    feed.take(answer([1]), true);
    feed.take(answer([1, 2, 3]), true);
    assert.deepEqual(sent.offsets, [0, 1, 2, 3], 'each offset once, in order');
    assert.equal(feed.position, 4);
  });
});
