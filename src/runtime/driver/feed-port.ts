import type { BadSourceRecord, FeedMarker, FeedPort } from '../../connectors/contract.js';
import type { FrameWriter } from '../channel/frame-codec.js';
import { DATA_ARG_BAD_RECORD, FrameKind } from '../channel/frame-kind.js';

/**
 * A source partition's feed ring as its connector sees it: rows and bad records become DATA
 * frames (a bad record flagged with `DATA_ARG_BAD_RECORD`), an epoch's end a `BATCH` marker, what
 * it says of its backlog a `SOURCE_BACKLOG` marker, and the engine's markers pass through as they are.
 */
export class RingFeedPort implements FeedPort {
  constructor(
    readonly writer: FrameWriter,
    /** The source partition (the DATA frames' arg). */
    private readonly partition: number,
  ) {}

  row(row: unknown, offset: number, sourceTime: number, readTime = 0): boolean {
    return this.writer.writeData(row, this.partition, sourceTime, readTime, offset);
  }

  badRecord(record: BadSourceRecord, offset: number, sourceTime: number): boolean {
    return this.writer.writeData(record, DATA_ARG_BAD_RECORD, sourceTime, 0, offset);
  }

  check(row: unknown): void {
    this.writer.checkRow(row);
  }

  endEpoch(epoch: number, end: number): boolean {
    return this.writer.writeMarker2(FrameKind.BATCH, epoch, end);
  }

  marker(marker: FeedMarker): boolean {
    return this.writer.writeMarker(marker.kind, marker.value);
  }

  backlog(behind: boolean): boolean {
    return this.writer.writeMarker(FrameKind.SOURCE_BACKLOG, behind ? 1 : 0);
  }

  publish(): void {
    this.writer.publish();
  }

  get blocked(): boolean {
    return this.writer.blocked;
  }

  get pendingFrames(): number {
    return this.writer.pendingFrames;
  }
}
