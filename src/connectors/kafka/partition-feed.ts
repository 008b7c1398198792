import { ErrorCode, MillraceError } from '../../errors.js';
import type { FeedPort } from '../contract.js';
import type { KafkaSourceSpec } from '../spec.js';
import { headersOf } from './codec.js';
import type { ReadPartition } from './reader.js';
import type { RawKafkaRecord } from './source.js';

/** An epoch's end at one partition: write `BATCH(epoch, end)` once the rows before `end` are written. */
interface PendingEnd {
  readonly epoch: number;
  readonly end: number;
}

/**
 * One partition of a Kafka source as the driver reads it (see KafkaSourceFeed): the next offset
 * to fetch, the latest offset known, and the epochs' ends still to write. It writes the records
 * fetched and the batch markers to the partition's ring, in offset order.
 *
 * Offsets are Kafka offsets. Transaction markers and (under `read_committed`) aborted records
 * take offsets but are never sent, so an epoch may end at an offset no row has.
 */
export class PartitionFeed {
  /** Next offset to fetch. */
  position = 0;
  /** Latest offset known (high watermark, or last stable offset under read_committed). */
  latest = 0;
  /** The topic was deleted (read no more). */
  gone = false;
  /** Offsets skipped because the log no longer had them (under `failOnDataLoss: false`). */
  offsetsLost = 0;
  private readonly ends: PendingEnd[] = [];
  /** What the task was told of the backlog (it starts out taking the partition for behind). */
  private toldBehind = true;

  constructor(
    private readonly spec: KafkaSourceSpec,
    readonly topic: string,
    /** The Kafka partition. */
    readonly partition: number,
    /** The source partition's feed ring. */
    private readonly writer: FeedPort,
    private readonly now: () => number,
  ) {}

  /** Fetching starts at `offset`, unless it is past it already. */
  resumeAt(offset: number): void {
    this.position = Math.max(this.position, offset);
    this.latest = Math.max(this.latest, this.position);
  }

  /** A latest offset listed by the brokers; true when it grew. */
  listed(offset: number): boolean {
    if (offset <= this.latest) return false;
    this.latest = offset;
    this.tellBacklog();
    return true;
  }

  /** Ends epoch `epoch` at `end`: its marker follows the rows before `end`. */
  endAt(epoch: number, end: number): void {
    this.ends.push({ epoch, end });
    this.writeDueEnds();
  }

  /** Whether to fetch: always in real-time mode (`live`), else while a batch's rows are missing. */
  wants(live: boolean): boolean {
    if (this.gone) return false;
    const next = this.ends[0];
    return live || (next !== undefined && this.position < next.end);
  }

  /** The ring is full: not fetched until it drains. */
  get blocked(): boolean {
    return this.writer.blocked;
  }

  /** Whether the rows before `target` have all been sent (or the partition is gone). */
  reached(target: number): boolean {
    return this.gone || this.position >= target;
  }

  /**
   * Sends a fetched partition's records (up to the next batch end in micro-batch mode); true when
   * the fetch held any.
   */
  take(part: ReadPartition, live: boolean): boolean {
    const topic = this.topic;
    const from = this.position;
    const writer = this.writer;
    const stable =
      this.spec.isolationLevel === 'read_committed' && part.lastStableOffset >= 0
        ? part.lastStableOffset
        : part.highWatermark;
    if (stable > this.latest) this.latest = stable;
    // Micro-batch: rows at or past the batch's end belong to the next batch, fetched again then.
    const limit = live ? Number.POSITIVE_INFINITY : (this.ends[0]?.end ?? from);
    const empty = part.next === null;
    let next = part.next ?? from;
    if (next > limit) next = limit;
    const now = this.now();
    for (const m of part.messages) {
      const offset = Number(m.offset);
      if (offset >= limit) break;
      // Sent already: an answer to a fetch asked for before an earlier answer was taken (the fetch
      // loop of a partition's old leader, while leadership moved) starts before the position.
      if (offset < from) continue;
      this.writeEndsBefore(offset);
      const raw: RawKafkaRecord = {
        key: m.key,
        value: m.value,
        topic,
        partition: part.partition,
        offset,
        timestamp: Number(m.timestamp),
        headers: headersOf(m.headers),
      };
      try {
        writer.row(raw, offset, Number(m.timestamp), now);
      } catch (cause) {
        writer.publish();
        this.position = offset;
        throw new MillraceError(
          cause instanceof MillraceError ? cause.code : ErrorCode.RECORD_NOT_ENCODABLE,
          `${this.spec.description}: the record at ${topic}-${part.partition} offset ${offset} cannot be sent: ${(cause as Error).message}`,
          { cause },
        );
      }
    }
    // Offsets up to the stable end hold nothing readable when the fetch came back empty (compacted
    // or filtered away): a batch ending there is complete.
    const end = this.ends[0]?.end;
    if (empty && end !== undefined && stable >= end && next < end) next = end;
    this.position = Math.max(from, next);
    this.writeDueEnds();
    this.tellBacklog();
    writer.publish();
    return part.messages.length > 0;
  }

  /**
   * Tells the task whether the partition has records it has not been sent (its position behind the
   * latest offset known), when that changed: a partition that lags holds the watermark back.
   */
  private tellBacklog(): void {
    const behind = !this.gone && this.position < this.latest;
    if (behind === this.toldBehind) return;
    this.toldBehind = behind;
    this.writer.backlog(behind);
    this.writer.publish();
  }

  /** The topic was deleted: read no more, and the epochs waiting for its rows end. */
  drop(): void {
    this.gone = true;
    this.writeDueEnds();
    this.tellBacklog();
  }

  /**
   * The fetch offset is outside the log, which now holds `earliest` to `latest`: data lost to
   * retention, or a recreated topic. Under `failOnDataLoss` this is the error the query fails with;
   * otherwise fetching goes on where the log has data, the offsets skipped counted, and it is null.
   */
  outOfRange(earliest: number, latest: number): MillraceError | null {
    const at = this.position;
    const lost =
      at < earliest ? `offsets ${at} to ${earliest - 1}` : `offset ${at} (the log now ends at ${latest})`;
    if (this.spec.failOnDataLoss) {
      return new MillraceError(
        ErrorCode.SOURCE_DATA_LOST,
        `${this.spec.description}: ${this.topic}-${this.partition} ${lost} no longer exist (deleted by retention, or the ` +
          'topic was recreated); set failOnDataLoss: false to skip them',
      );
    }
    const to = at < earliest ? earliest : latest;
    if (to > at) this.offsetsLost += to - at;
    this.position = to;
    this.writeDueEnds();
    this.tellBacklog();
    return null;
  }

  /** Writes the markers of batches that end at or before `offset` (a row at `offset` follows them). */
  private writeEndsBefore(offset: number): void {
    const ends = this.ends;
    while (ends.length > 0 && ends[0]!.end <= offset) {
      const e = ends.shift()!;
      this.writer.endEpoch(e.epoch, e.end);
    }
  }

  /** Writes the markers of batches whose rows have all been sent. */
  private writeDueEnds(): void {
    const ends = this.ends;
    let wrote = false;
    while (ends.length > 0 && (ends[0]!.end <= this.position || this.gone)) {
      const e = ends.shift()!;
      this.writer.endEpoch(e.epoch, e.end);
      wrote = true;
    }
    if (wrote) this.writer.publish();
  }
}
