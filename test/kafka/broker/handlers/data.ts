/** Produce and Fetch: appending record batches, and (long-poll) reading them back. */
import { Encoder } from '../kafkajs.js';
import type { ReadResult } from '../log.js';
import { ErrorCode, isolationOf } from '../protocol.js';
import { DROP, readLong, throttle, writeArray } from '../wire.js';
import type { Handler } from './context.js';

/**
 * Produce v3-7. Batches are appended as sent (re-based at the log end). With `loseNextProduceAck`
 * armed, the request is appended and then the connection is closed instead of answering.
 */
export const produce: Handler = ({ state, version, faults }, d) => {
  d.readString(); // transactionalId: fencing is enforced through the producer epoch in each partition
  const acks = d.readInt16();
  d.readInt32();
  const topics = d.readArray((t) => ({
    name: t.readString()!,
    partitions: t.readArray((p) => ({ partition: p.readInt32(), records: p.readBytes() })),
  }));
  const enc = writeArray(new Encoder(), topics, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, { partition, records }) => {
      const log = state.log(name, partition);
      const result = !log
        ? { error: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, baseOffset: -1 }
        : records
          ? log.append(records)
          : { error: ErrorCode.CORRUPT_MESSAGE, baseOffset: -1 };
      p.writeInt32(partition).writeInt16(result.error).writeInt64(result.baseOffset).writeInt64(-1);
      if (version >= 5) p.writeInt64(log?.logStartOffset ?? -1);
    });
  });
  state.notifyData();
  if (faults.lostProduceAcks > 0) {
    faults.lostProduceAcks--;
    return DROP;
  }
  return acks === 0 ? null : throttle(enc, true);
};

interface FetchPartition {
  partition: number;
  fetchOffset: number;
  maxBytes: number;
}

/**
 * Fetch v4-11. Without enough data (minBytes) it waits up to maxWaitTime, answering as soon as a
 * produce, transaction marker or topic change makes data available. No fetch sessions: sessionId 0.
 */
export const fetch: Handler = async ({ state, version, conn }, d) => {
  d.readInt32();
  const maxWaitMs = d.readInt32();
  const minBytes = d.readInt32();
  const maxBytes = d.readInt32();
  const isolation = isolationOf(d.readInt8());
  if (version >= 7) d.readInt64(); // sessionId, sessionEpoch
  const topics = d.readArray((t) => ({
    name: t.readString()!,
    partitions: t.readArray((p): FetchPartition => {
      const partition = p.readInt32();
      if (version >= 9) p.readInt32();
      const fetchOffset = readLong(p);
      if (version >= 5) p.readInt64();
      return { partition, fetchOffset, maxBytes: p.readInt32() };
    }),
  }));
  // forgotten topics (v7+) and rack id (v11+) need no handling without fetch sessions and replicas

  const deadline = Date.now() + maxWaitMs;
  const read = () => {
    let budget = maxBytes;
    let bytes = 0;
    let errors = false;
    const results = topics.map(({ name, partitions }) => ({
      name,
      partitions: partitions.map(({ partition, fetchOffset, maxBytes: partitionMax }) => {
        const log = state.log(name, partition);
        const result: ReadResult = log
          ? log.read(fetchOffset, Math.min(partitionMax, Math.max(budget, 0)), isolation)
          : unknownPartition;
        budget -= result.records.length;
        bytes += result.records.length;
        errors ||= result.error !== ErrorCode.NONE;
        return { partition, result };
      }),
    }));
    // As Kafka: answer at once when nothing was asked for (e.g. every partition paused).
    const nothingAsked = topics.every((t) => t.partitions.length === 0);
    return { results, ready: errors || nothingAsked || minBytes <= 0 || bytes >= minBytes };
  };
  let { results, ready } = read();
  while (!ready && Date.now() < deadline && !conn.closed.signal.aborted) {
    await state.waitForData(deadline - Date.now(), conn.closed.signal);
    ({ results, ready } = read());
  }

  const enc = throttle(new Encoder(), true);
  if (version >= 7) enc.writeInt16(ErrorCode.NONE).writeInt32(0);
  return writeArray(enc, results, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, { partition, result }) => {
      p.writeInt32(partition).writeInt16(result.error).writeInt64(result.highWatermark);
      p.writeInt64(result.lastStableOffset);
      if (version >= 5) p.writeInt64(result.logStartOffset);
      if (result.aborted === null) p.writeInt32(-1);
      else writeArray(p, result.aborted, (a, t) => a.writeInt64(t.producerId).writeInt64(t.firstOffset));
      if (version >= 11) p.writeInt32(-1);
      p.writeBytes(result.records);
    });
  });
};

const unknownPartition: ReadResult = {
  error: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  highWatermark: -1,
  lastStableOffset: -1,
  logStartOffset: -1,
  records: Buffer.alloc(0),
  aborted: null,
};
