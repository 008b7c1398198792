/** Transaction APIs: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn. */
import { Encoder } from '../kafkajs.js';
import { ErrorCode } from '../protocol.js';
import { readLong, writeArray } from '../wire.js';
import type { Handler } from './context.js';

/** InitProducerId v0-1: throttle, error, producerId, epoch. */
export const initProducerId: Handler = ({ state }, d) => {
  const transactionalId = d.readString();
  d.readInt32();
  const { producerId, epoch } = state.txns.initProducerId(transactionalId);
  return new Encoder().writeInt32(0).writeInt16(ErrorCode.NONE).writeInt64(producerId).writeInt16(epoch);
};

/** AddPartitionsToTxn v0-1: per-partition errors. */
export const addPartitionsToTxn: Handler = ({ state }, d) => {
  const transactionalId = d.readString()!;
  const producerId = readLong(d);
  const epoch = d.readInt16();
  const topics = d.readArray((t) => ({
    name: t.readString()!,
    partitions: t.readArray((p) => p.readInt32()),
  }));
  const error = state.txns.check(transactionalId, producerId, epoch);
  return writeArray(new Encoder().writeInt32(0), topics, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, partition) => {
      let code: number = error;
      if (code === ErrorCode.NONE && !state.log(name, partition)) code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
      if (code === ErrorCode.NONE) state.txns.addPartition(transactionalId, name, partition);
      p.writeInt32(partition).writeInt16(code);
    });
  });
};

/** AddOffsetsToTxn v0-1. */
export const addOffsetsToTxn: Handler = ({ state }, d) => {
  const transactionalId = d.readString()!;
  const producerId = readLong(d);
  const epoch = d.readInt16();
  const groupId = d.readString()!;
  const error = state.txns.check(transactionalId, producerId, epoch);
  if (error === ErrorCode.NONE) state.txns.addOffsets(transactionalId, groupId);
  return new Encoder().writeInt32(0).writeInt16(error);
};

/** TxnOffsetCommit v0-1: offsets wait in the transaction until EndTxn commits it. */
export const txnOffsetCommit: Handler = ({ state }, d) => {
  const transactionalId = d.readString()!;
  const groupId = d.readString()!;
  const producerId = readLong(d);
  const epoch = d.readInt16();
  const topics = d.readArray((t) => ({
    name: t.readString()!,
    partitions: t.readArray((p) => ({
      partition: p.readInt32(),
      offset: readLong(p),
      metadata: p.readString(),
    })),
  }));
  const error = state.txns.check(transactionalId, producerId, epoch);
  return writeArray(new Encoder().writeInt32(0), topics, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, { partition, offset, metadata }) => {
      let code: number = error;
      if (
        code === ErrorCode.NONE &&
        !state.txns.stageOffset(transactionalId, groupId, name, partition, { offset, metadata })
      ) {
        code = ErrorCode.INVALID_TXN_STATE;
      }
      p.writeInt32(partition).writeInt16(code);
    });
  });
};

/** EndTxn v0-1: writes COMMIT or ABORT markers to every partition of the transaction. */
export const endTxn: Handler = ({ state, faults }, d) => {
  const transactionalId = d.readString()!;
  const producerId = readLong(d);
  const epoch = d.readInt16();
  const commit = d.readBoolean();
  let error = state.txns.check(transactionalId, producerId, epoch);
  if (error === ErrorCode.NONE && commit && faults.expiredTxnCommits > 0) {
    faults.expiredTxnCommits--;
    state.txns.expire(transactionalId);
    error = ErrorCode.INVALID_PRODUCER_EPOCH;
  }
  if (error === ErrorCode.NONE) state.txns.endTxn(transactionalId, commit);
  return new Encoder().writeInt32(0).writeInt16(error);
};
