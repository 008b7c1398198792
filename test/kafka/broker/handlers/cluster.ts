/**
 * Cluster-level APIs: ApiVersions, Metadata, FindCoordinator, CreateTopics, DeleteTopics,
 * DeleteRecords, ListOffsets.
 */
import { Encoder } from '../kafkajs.js';
import { ErrorCode, isolationOf, SUPPORTED_VERSIONS } from '../protocol.js';
import { DROP, readLong, readNullableArray, throttle, writeArray } from '../wire.js';
import { type Handler, NODE_ID } from './context.js';

/** ApiVersions v0-2: error, [apiKey, min, max], throttle (v1+). */
export const apiVersions: Handler = ({ version }) => {
  const error = version <= 2 ? ErrorCode.NONE : ErrorCode.UNSUPPORTED_VERSION;
  const enc = writeArray(new Encoder().writeInt16(error), SUPPORTED_VERSIONS, (e, [apiKey, [min, max]]) =>
    e.writeInt16(apiKey).writeInt16(min).writeInt16(max),
  );
  // An unsupported ApiVersions version is answered in the v0 layout, so the client can retry lower.
  return throttle(enc, version >= 1 && version <= 2);
};

/** Metadata v1-6: one broker, which leads every partition; may auto-create requested topics. */
export const metadata: Handler = ({ state, version, host, port }, d) => {
  const requested = readNullableArray(d, (r) => r.readString()!);
  const allowAutoCreate = version >= 4 ? d.readBoolean() : true;
  const names = requested ?? [...state.topics.keys()];
  const enc = throttle(new Encoder(), version >= 3);
  writeArray(enc, [0], (e) => e.writeInt32(NODE_ID).writeString(host).writeInt32(port).writeString(null));
  if (version >= 2) enc.writeString('millrace-test-cluster');
  enc.writeInt32(NODE_ID);
  return writeArray(enc, names, (e, name) => {
    if (!state.topics.has(name) && state.autoCreateTopics && allowAutoCreate) state.createTopic(name, 1);
    const partitions = state.topics.get(name);
    e.writeInt16(partitions ? ErrorCode.NONE : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
      .writeString(name)
      .writeBoolean(false);
    writeArray(e, partitions?.keys() ?? [], (p, index) => {
      p.writeInt16(ErrorCode.NONE).writeInt32(index).writeInt32(NODE_ID);
      p.writeArray([NODE_ID], 'int32').writeArray([NODE_ID], 'int32');
      if (version >= 5) p.writeArray([], 'int32');
    });
  });
};

/** FindCoordinator v0-2: this broker coordinates every group and transactional id. */
export const findCoordinator: Handler = ({ version, host, port, faults }, d) => {
  d.readString();
  const keyType = version >= 1 ? d.readInt8() : 0;
  if (keyType === 1 && faults.droppedTxnCoordinatorLookups > 0) {
    faults.droppedTxnCoordinatorLookups--;
    return DROP;
  }
  const enc = throttle(new Encoder(), version >= 1).writeInt16(ErrorCode.NONE);
  if (version >= 1) enc.writeString(null);
  return enc.writeInt32(NODE_ID).writeString(host).writeInt32(port);
};

/** CreateTopics v0-3 (numPartitions -1 means 1, or as many as the replica assignment lists). */
export const createTopics: Handler = ({ state, version }, d) => {
  const topics = d.readArray((t) => {
    const name = t.readString()!;
    const numPartitions = t.readInt32();
    t.readInt16();
    const assigned = t.readArray((a) => [a.readInt32(), a.readArray((r) => r.readInt32())]).length;
    t.readArray((c) => [c.readString(), c.readString()]);
    return { name, partitions: numPartitions > 0 ? numPartitions : Math.max(1, assigned) };
  });
  d.readInt32();
  const validateOnly = version >= 1 && d.readBoolean();
  const enc = throttle(new Encoder(), version >= 2);
  return writeArray(enc, topics, (e, { name, partitions }) => {
    const exists = state.topics.has(name);
    if (!exists && !validateOnly) state.createTopic(name, partitions);
    e.writeString(name).writeInt16(exists ? ErrorCode.TOPIC_ALREADY_EXISTS : ErrorCode.NONE);
    if (version >= 1) e.writeString(exists ? `Topic '${name}' already exists.` : null);
  });
};

/** DeleteTopics v0-1. */
export const deleteTopics: Handler = ({ state, version }, d) => {
  const names = d.readArray((r) => r.readString()!);
  d.readInt32();
  return writeArray(throttle(new Encoder(), version >= 1), names, (e, name) =>
    e
      .writeString(name)
      .writeInt16(state.deleteTopic(name) ? ErrorCode.NONE : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
  );
};

/** DeleteRecords v0-1: advances log start offsets (offset -1 means the high watermark). */
export const deleteRecords: Handler = ({ state }, d) => {
  const topics = d.readArray((t) => ({
    name: t.readString()!,
    partitions: t.readArray((p) => ({ partition: p.readInt32(), offset: readLong(p) })),
  }));
  d.readInt32();
  const enc = writeArray(new Encoder().writeInt32(0), topics, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, { partition, offset }) => {
      const log = state.log(name, partition);
      const ok = log?.deleteBefore(offset < 0 ? log.logEndOffset : offset);
      p.writeInt32(partition).writeInt64(log?.logStartOffset ?? -1);
      p.writeInt16(
        !log ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ok ? ErrorCode.NONE : ErrorCode.OFFSET_OUT_OF_RANGE,
      );
    });
  });
  state.notifyData();
  return enc;
};

const LATEST = -1;
const EARLIEST = -2;

/** ListOffsets v1-3: earliest, latest (the LSO for read_committed), or by timestamp. */
export const listOffsets: Handler = ({ state, version }, d) => {
  d.readInt32();
  const isolation = isolationOf(version >= 2 ? d.readInt8() : 0);
  const topics = d.readArray((t) => ({
    name: t.readString()!,
    partitions: t.readArray((p) => ({ partition: p.readInt32(), timestamp: readLong(p) })),
  }));
  return writeArray(throttle(new Encoder(), version >= 2), topics, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, { partition, timestamp }) => {
      const log = state.log(name, partition);
      if (!log) {
        p.writeInt32(partition)
          .writeInt16(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
          .writeInt64(-1)
          .writeInt64(-1);
        return;
      }
      const latest = isolation === 'read_committed' ? log.lastStableOffset : log.logEndOffset;
      const offset =
        timestamp === LATEST
          ? latest
          : timestamp === EARLIEST
            ? log.logStartOffset
            : log.offsetForTimestamp(timestamp);
      p.writeInt32(partition).writeInt16(ErrorCode.NONE).writeInt64(-1).writeInt64(offset);
    });
  });
};
