/**
 * One partition's log: the stored record batches, log start / end offsets, open and aborted transactions
 * (for the last stable offset and read_committed fetches), and per-producer sequence state (idempotence).
 */
import { controlBatch, rebase, splitBatches } from './batch.js';
import { ErrorCode, type Isolation } from './protocol.js';

/** A batch as stored: its bytes (baseOffset already patched) and the fields reads need. */
export interface StoredBatch {
  baseOffset: number;
  lastOffset: number;
  maxTimestamp: number;
  bytes: Buffer;
}

/** An aborted transaction's span in this partition, from its first batch to its ABORT marker. */
export interface AbortedTxn {
  producerId: number;
  firstOffset: number;
  lastOffset: number;
}

/** Idempotence state of one producer id in one partition. */
interface ProducerState {
  epoch: number;
  /** Last sequence written in this epoch; -1 when the next batch must start at 0. */
  lastSequence: number;
  /** Recently written batches, for answering retries of a batch already appended (Kafka keeps 5). */
  recent: { firstSequence: number; lastSequence: number; baseOffset: number }[];
}

export interface AppendResult {
  error: number;
  baseOffset: number;
}

export interface ReadResult {
  error: number;
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  records: Buffer;
  /** Aborted transactions overlapping the returned batches (read_committed only), else null. */
  aborted: AbortedTxn[] | null;
}

const RECENT_BATCHES = 5;

export class PartitionLog {
  private batches: StoredBatch[] = [];
  logStartOffset = 0;
  /** Next offset to assign; with a single replica also the high watermark. */
  logEndOffset = 0;
  /** producerId -> first offset of its open transaction here. */
  private readonly openTxns = new Map<number, number>();
  private aborted: AbortedTxn[] = [];
  private readonly producers = new Map<number, ProducerState>();

  /** First offset of the oldest open transaction, or the high watermark when none is open. */
  get lastStableOffset(): number {
    let lso = this.logEndOffset;
    for (const first of this.openTxns.values()) lso = Math.min(lso, first);
    return lso;
  }

  /**
   * Appends the batches of one produce request. An idempotent producer's retry of a batch already
   * written answers with the original base offset and appends nothing.
   */
  append(records: Buffer): AppendResult {
    const batches = splitBatches(records);
    if (!batches || batches.length === 0) return { error: ErrorCode.CORRUPT_MESSAGE, baseOffset: -1 };
    for (const { header } of batches) {
      if (header.magic !== 2) return { error: ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, baseOffset: -1 };
      if (!header.crcValid || header.control) return { error: ErrorCode.CORRUPT_MESSAGE, baseOffset: -1 };
    }
    let first = -1;
    for (const { header, bytes } of batches) {
      const count = header.lastOffsetDelta + 1;
      const pid = header.producerId;
      let state: ProducerState | undefined;
      if (pid >= 0) {
        state = this.producers.get(pid);
        if (state && header.producerEpoch < state.epoch) {
          return { error: ErrorCode.INVALID_PRODUCER_EPOCH, baseOffset: -1 };
        }
        if (!state || header.producerEpoch > state.epoch) {
          state = { epoch: header.producerEpoch, lastSequence: -1, recent: [] };
        }
        const seq = header.baseSequence;
        const duplicate = state.recent.find(
          (r) => r.firstSequence === seq && r.lastSequence === seq + count - 1,
        );
        if (duplicate) {
          if (first < 0) first = duplicate.baseOffset;
          continue;
        }
        if (seq !== state.lastSequence + 1)
          return { error: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, baseOffset: -1 };
      }
      const baseOffset = this.logEndOffset;
      this.store(rebase(bytes, baseOffset), baseOffset, baseOffset + count - 1, header.maxTimestamp);
      if (first < 0) first = baseOffset;
      if (state) {
        state.lastSequence = header.baseSequence + count - 1;
        state.recent = [
          ...state.recent,
          { firstSequence: header.baseSequence, lastSequence: state.lastSequence, baseOffset },
        ].slice(-RECENT_BATCHES);
        this.producers.set(pid, state);
        if (header.transactional && !this.openTxns.has(pid)) this.openTxns.set(pid, baseOffset);
      }
    }
    return { error: ErrorCode.NONE, baseOffset: first };
  }

  /**
   * Ends `producerId`'s transaction here with a COMMIT or ABORT control batch. A marker with a newer
   * epoch (written when a producer is fenced) also fences the producer's older epoch in this partition.
   */
  writeMarker(producerId: number, producerEpoch: number, commit: boolean): void {
    const offset = this.logEndOffset;
    this.store(controlBatch(offset, producerId, producerEpoch, commit), offset, offset, Date.now());
    const state = this.producers.get(producerId);
    if (!state || producerEpoch > state.epoch) {
      this.producers.set(producerId, { epoch: producerEpoch, lastSequence: -1, recent: [] });
    }
    const firstOffset = this.openTxns.get(producerId);
    if (firstOffset === undefined) return;
    this.openTxns.delete(producerId);
    if (!commit) this.aborted.push({ producerId, firstOffset, lastOffset: offset });
  }

  /**
   * The batches from `fetchOffset` on (at least one, then up to `maxBytes`), bounded by the high
   * watermark, or by the last stable offset for read_committed.
   */
  read(fetchOffset: number, maxBytes: number, isolation: Isolation): ReadResult {
    const result: ReadResult = {
      error: ErrorCode.NONE,
      highWatermark: this.logEndOffset,
      lastStableOffset: this.lastStableOffset,
      logStartOffset: this.logStartOffset,
      records: Buffer.alloc(0),
      aborted: null,
    };
    if (fetchOffset < this.logStartOffset || fetchOffset > this.logEndOffset) {
      return { ...result, error: ErrorCode.OFFSET_OUT_OF_RANGE };
    }
    const committed = isolation === 'read_committed';
    const upper = committed ? result.lastStableOffset : this.logEndOffset;
    const picked: StoredBatch[] = [];
    let size = 0;
    for (const batch of this.batchesFrom(fetchOffset)) {
      if (batch.baseOffset >= upper) break;
      if (picked.length > 0 && size + batch.bytes.length > maxBytes) break;
      picked.push(batch);
      size += batch.bytes.length;
    }
    result.records = Buffer.concat(picked.map((b) => b.bytes));
    if (committed) {
      const last = picked.length > 0 ? picked[picked.length - 1]!.lastOffset : fetchOffset - 1;
      result.aborted = this.aborted.filter((t) => t.lastOffset >= fetchOffset && t.firstOffset <= last);
    }
    return result;
  }

  /**
   * Stored batches whose last offset is at or after `offset`, in offset order. The first is found
   * by binary search: a consumer fetches from near the end of a log of thousands of batches.
   */
  *batchesFrom(offset: number): Generator<StoredBatch> {
    const batches = this.batches;
    let lo = 0;
    let hi = batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (batches[mid]!.lastOffset >= offset) hi = mid;
      else lo = mid + 1;
    }
    for (let i = lo; i < batches.length; i++) yield batches[i]!;
  }

  /** Aborted transactions (all of them still in the log), for read_committed decoding. */
  abortedTxns(): readonly AbortedTxn[] {
    return this.aborted;
  }

  /** The first offset whose batch has a timestamp at or after `timestamp`, or -1 if none. */
  offsetForTimestamp(timestamp: number): number {
    for (const batch of this.batchesFrom(this.logStartOffset)) {
      if (batch.maxTimestamp >= timestamp) return Math.max(batch.baseOffset, this.logStartOffset);
    }
    return -1;
  }

  /** Advances the log start offset to `offset` (DeleteRecords); false if beyond the high watermark. */
  deleteBefore(offset: number): boolean {
    if (offset > this.logEndOffset || offset < 0) return false;
    if (offset <= this.logStartOffset) return true;
    this.logStartOffset = offset;
    this.batches = this.batches.filter((b) => b.lastOffset >= offset);
    this.aborted = this.aborted.filter((t) => t.lastOffset >= offset);
    return true;
  }

  private store(bytes: Buffer, baseOffset: number, lastOffset: number, maxTimestamp: number): void {
    this.batches.push({ baseOffset, lastOffset, maxTimestamp, bytes });
    this.logEndOffset = lastOffset + 1;
  }
}
