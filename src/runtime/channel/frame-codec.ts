import { Packr, RESET_BUFFER_MODE, REUSE_BUFFER_MODE, Unpackr } from 'msgpackr';
import { ErrorCode, MillraceError } from '../../errors.js';
import {
  DATA_ORIGIN_FIELD,
  DATA_PREFIX_BYTES,
  DATA_READ_TIME_FIELD,
  DATA_SOURCE_TIME_FIELD,
  FrameKind,
  MARKER_PAYLOAD_BYTES,
} from './frame-kind.js';
import { makeTag } from './ring-layout.js';
import type { RingConsumer, RingProducer } from './spsc-ring.js';

/**
 * Rows are msgpackr records in `sequential` mode: a record structure (its key list) is written
 * inline the first time it is used on a channel and referred to by id afterwards. That needs the
 * decoder to see every frame of its channel in order, which an SPSC ring guarantees — so each
 * channel has its own encoder/decoder pair, and an encoded frame is never dropped (a frame that
 * does not fit waits in the writer's pending queue).
 */
const ENCODE_MODE = REUSE_BUFFER_MODE | RESET_BUFFER_MODE;

interface EncodedTarget extends Buffer {
  start: number;
  end: number;
}

/** A frame that did not fit the ring, kept (copied) until the consumer frees space. */
interface PendingFrame {
  tag: number;
  f0: number;
  f1: number;
  f2: number;
  /** Number of leading Float64 fields in use (0, 1 or 3). */
  fields: number;
  body: Buffer | null;
}

/**
 * The writing side of one channel: encodes rows and markers into a ring, or into a bounded pending
 * queue when the ring is full (backpressure: the owning task stops consuming its input until
 * `flush()` empties the queue, so at most one input row's output waits here). Rows are staged and
 * published every few frames; markers, `flush()` and `publish()` publish everything before them.
 */
export class FrameWriter {
  private readonly packr = new Packr({ sequential: true });
  private readonly pending: PendingFrame[] = [];
  /** Frames written to the ring (metrics). */
  framesWritten = 0;
  /** Times a frame had to wait for space (metrics). */
  fullEvents = 0;

  constructor(readonly ring: RingProducer) {}

  /** True while frames wait for space; the owner must not produce more before flush() succeeds. */
  get blocked(): boolean {
    return this.pending.length !== 0;
  }

  /** Encodes a row (DATA frame). Returns false when it had to be queued. */
  writeData(row: unknown, arg: number, sourceTime: number, readTime: number, origin: number): boolean {
    const body = this.encode(row);
    const len = body.end - body.start;
    if (this.pending.length === 0) {
      const at = this.ring.reserve(DATA_PREFIX_BYTES + len);
      if (at >= 0) {
        const f = at >> 3;
        this.ring.f64[f + DATA_SOURCE_TIME_FIELD] = sourceTime;
        this.ring.f64[f + DATA_READ_TIME_FIELD] = readTime;
        this.ring.f64[f + DATA_ORIGIN_FIELD] = origin;
        body.copy(this.ring.buf, at + DATA_PREFIX_BYTES, body.start, body.end);
        this.ring.stage(makeTag(FrameKind.DATA, arg));
        this.framesWritten++;
        return true;
      }
      this.fullEvents++;
    }
    this.pending.push({
      tag: makeTag(FrameKind.DATA, arg),
      f0: sourceTime,
      f1: readTime,
      f2: origin,
      fields: 3,
      body: Buffer.from(body.subarray(body.start, body.end)),
    });
    return false;
  }

  /** Writes a marker carrying one number (watermark, epoch, flush id). */
  writeMarker(kind: number, value: number, arg = 0): boolean {
    const tag = makeTag(kind, arg);
    if (this.pending.length === 0) {
      const at = this.ring.reserve(MARKER_PAYLOAD_BYTES);
      if (at >= 0) {
        this.ring.f64[at >> 3] = value;
        this.ring.commit(tag);
        return true;
      }
      this.fullEvents++;
    }
    this.pending.push({ tag, f0: value, f1: 0, f2: 0, fields: 1, body: null });
    return false;
  }

  /** Writes a frame whose whole payload is one msgpack value (dead letters, results). */
  writeValue(kind: number, value: unknown, arg = 0): boolean {
    const body = this.encode(value);
    const tag = makeTag(kind, arg);
    if (this.pending.length === 0) {
      const at = this.ring.reserve(body.end - body.start);
      if (at >= 0) {
        body.copy(this.ring.buf, at, body.start, body.end);
        this.ring.stage(tag);
        return true;
      }
      this.fullEvents++;
    }
    this.pending.push({
      tag,
      f0: 0,
      f1: 0,
      f2: 0,
      fields: 0,
      body: Buffer.from(body.subarray(body.start, body.end)),
    });
    return false;
  }

  /** Moves queued frames into the ring. Returns true when nothing is left waiting. */
  flush(): boolean {
    const q = this.pending;
    let i = 0;
    for (; i < q.length; i++) {
      const p = q[i]!;
      const bodyLen = p.body === null ? 0 : p.body.length;
      const at = this.ring.reserve(p.fields * 8 + bodyLen);
      if (at < 0) break;
      const f = at >> 3;
      if (p.fields >= 1) this.ring.f64[f] = p.f0;
      if (p.fields === 3) {
        this.ring.f64[f + 1] = p.f1;
        this.ring.f64[f + 2] = p.f2;
      }
      if (p.body !== null) p.body.copy(this.ring.buf, at + p.fields * 8);
      this.ring.stage(p.tag);
      if (p.fields === 3) this.framesWritten++;
    }
    if (i > 0) q.splice(0, i);
    this.ring.publish();
    return q.length === 0;
  }

  /**
   * Makes the rows written so far visible to the reader. Rows are staged and published in small
   * batches (markers are published at once); the owner calls this whenever it stops writing.
   */
  publish(): void {
    this.ring.publish();
  }

  get pendingFrames(): number {
    return this.pending.length;
  }

  private encode(value: unknown): EncodedTarget {
    try {
      return this.packr.pack(value, ENCODE_MODE) as unknown as EncodedTarget;
    } catch (cause) {
      throw new MillraceError(
        ErrorCode.RECORD_NOT_ENCODABLE,
        `a row could not be encoded for the next stage: ${(cause as Error).message}`,
        { cause },
      );
    }
  }
}

/** The reading side of one channel. */
export class FrameReader {
  private readonly unpackr = new Unpackr({ sequential: true });
  private scratch = Buffer.allocUnsafe(4096);

  constructor(readonly ring: RingConsumer) {}

  /** Decodes the row of the current DATA frame. */
  readRow(): unknown {
    return this.decodeFrom(DATA_PREFIX_BYTES);
  }

  /** Decodes a frame whose whole payload is one msgpack value. */
  readValue(): unknown {
    return this.decodeFrom(0);
  }

  sourceTime(): number {
    return this.ring.f64[(this.ring.payload >> 3) + DATA_SOURCE_TIME_FIELD]!;
  }

  readTime(): number {
    return this.ring.f64[(this.ring.payload >> 3) + DATA_READ_TIME_FIELD]!;
  }

  origin(): number {
    return this.ring.f64[(this.ring.payload >> 3) + DATA_ORIGIN_FIELD]!;
  }

  /** The number carried by the current marker frame. */
  markerValue(): number {
    return this.ring.f64[this.ring.payload >> 3]!;
  }

  private decodeFrom(offset: number): unknown {
    const n = this.ring.length - offset;
    if (n > this.scratch.length) this.scratch = Buffer.allocUnsafe(Math.max(n, this.scratch.length * 2));
    // Copy out first: msgpackr's native string extractor refuses shared memory, and each refusal
    // is far more expensive than this copy (see BENCH.md).
    this.ring.buf.copy(this.scratch, 0, this.ring.payload + offset, this.ring.payload + this.ring.length);
    return this.unpackr.unpack(this.scratch, n);
  }
}
