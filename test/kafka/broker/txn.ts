/**
 * Transaction coordinator: transactional ids to producer id and epoch, each id's ongoing transaction
 * (its partitions, its groups, its pending offsets), and ending transactions by writing COMMIT/ABORT
 * markers. Offsets sent in a transaction reach the group only when it commits.
 */
import type { CommittedOffset } from './groups.js';
import { ErrorCode } from './protocol.js';
import type { BrokerState } from './state.js';

interface Transaction {
  producerId: number;
  epoch: number;
  /** Partitions added to the ongoing transaction, as "topic\u0000partition". */
  partitions: Set<string>;
  /** groupId -> "topic\u0000partition" -> offset, committed to the group with the transaction. */
  offsets: Map<string, Map<string, CommittedOffset>>;
}

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;
const unkey = (k: string): [string, number] => {
  const at = k.lastIndexOf('\u0000');
  return [k.slice(0, at), Number(k.slice(at + 1))];
};

export class TransactionCoordinator {
  private readonly txns = new Map<string, Transaction>();

  constructor(private readonly state: BrokerState) {}

  /**
   * InitProducerId. Without a transactional id: a fresh producer id, epoch 0. With one: the same
   * producer id with the epoch bumped, which fences older producers; their open transaction is aborted.
   */
  initProducerId(transactionalId: string | null): { producerId: number; epoch: number } {
    if (transactionalId === null) return { producerId: this.state.nextProducerId(), epoch: 0 };
    const txn = this.txns.get(transactionalId);
    if (!txn) {
      const fresh: Transaction = {
        producerId: this.state.nextProducerId(),
        epoch: 0,
        partitions: new Set(),
        offsets: new Map(),
      };
      this.txns.set(transactionalId, fresh);
      return { producerId: fresh.producerId, epoch: 0 };
    }
    txn.epoch++;
    this.end(txn, false);
    return { producerId: txn.producerId, epoch: txn.epoch };
  }

  /** The error for a request from (producerId, epoch) on `transactionalId`, or NONE. */
  check(transactionalId: string, producerId: number, epoch: number): number {
    const txn = this.txns.get(transactionalId);
    if (!txn || txn.producerId !== producerId) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
    return epoch === txn.epoch ? ErrorCode.NONE : ErrorCode.INVALID_PRODUCER_EPOCH;
  }

  addPartition(transactionalId: string, topic: string, partition: number): void {
    this.txns.get(transactionalId)!.partitions.add(key(topic, partition));
  }

  addOffsets(transactionalId: string, groupId: string): void {
    const offsets = this.txns.get(transactionalId)!.offsets;
    if (!offsets.has(groupId)) offsets.set(groupId, new Map());
  }

  /** TxnOffsetCommit: false (INVALID_TXN_STATE) if the group was not added with AddOffsetsToTxn. */
  stageOffset(
    transactionalId: string,
    groupId: string,
    topic: string,
    partition: number,
    offset: CommittedOffset,
  ) {
    const pending = this.txns.get(transactionalId)!.offsets.get(groupId);
    if (!pending) return false;
    pending.set(key(topic, partition), offset);
    return true;
  }

  /**
   * The ongoing transaction of `transactionalId` timed out: it is aborted and the epoch bumped, so
   * its producer's next request is refused as fenced (INVALID_PRODUCER_EPOCH).
   */
  expire(transactionalId: string): void {
    const txn = this.txns.get(transactionalId)!;
    txn.epoch++;
    this.end(txn, false);
  }

  /** EndTxn: writes the markers and, on commit, publishes the transaction's offsets to the groups. */
  endTxn(transactionalId: string, commit: boolean): void {
    this.end(this.txns.get(transactionalId)!, commit);
  }

  private end(txn: Transaction, commit: boolean): void {
    for (const k of txn.partitions) {
      const [topic, partition] = unkey(k);
      this.state.log(topic, partition)?.writeMarker(txn.producerId, txn.epoch, commit);
    }
    if (commit) {
      for (const [groupId, offsets] of txn.offsets) {
        for (const [k, offset] of offsets) this.state.groups.commit(groupId, ...unkey(k), offset);
      }
    }
    txn.partitions.clear();
    txn.offsets.clear();
    this.state.notifyData();
  }
}
