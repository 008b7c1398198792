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

/**
 * Rows up to this many bytes are copied to and from shared memory with an Int32 loop: for small
 * rows that is about twice as fast as Buffer.copy / TypedArray.set, whose per-call cost dominates
 * on shared memory (native-bench/micro). Int32, not Float64, so no NaN bit pattern can be rewritten.
 */
const WORD_COPY_MAX_BYTES = 128;

/** Views of a non-shared buffer as Int32 words, cached per ArrayBuffer. */
class WordView {
  private buffer: ArrayBufferLike | null = null;
  words: Int32Array<ArrayBufferLike> = new Int32Array(0);

  of(b: Buffer): Int32Array<ArrayBufferLike> | null {
    if (b.buffer !== this.buffer) {
      this.buffer = b.buffer;
      this.words =
        (b.byteOffset & 3) === 0 ? new Int32Array(b.buffer, b.byteOffset, b.length >> 2) : new Int32Array(0);
    }
    return this.words.length === 0 ? null : this.words;
  }
}

/** Copies `src[start, end)` to byte `at` (4-aligned) of the ring; may write up to 3 bytes past the end. */
function copyIn(
  ring: RingProducer,
  at: number,
  src: Buffer,
  start: number,
  end: number,
  view: WordView,
): void {
  const words = end - start <= WORD_COPY_MAX_BYTES && (start & 3) === 0 ? view.of(src) : null;
  if (words !== null && (end + 3) >> 2 <= words.length) {
    const dst = ring.i32;
    for (let i = at >> 2, k = start >> 2, stop = (end + 3) >> 2; k < stop; i++, k++) dst[i] = words[k]!;
    return;
  }
  src.copy(ring.buf, at, start, end);
}

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
  /** Number of leading Float64 fields in use (0 to 3). */
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
  /** Encodes rows only to check them (see checkRow); made on first use. */
  private checker: Packr | undefined;
  private readonly view = new WordView();
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
        copyIn(this.ring, at + DATA_PREFIX_BYTES, body, body.start, body.end, this.view);
        this.ring.stage(makeTag(FrameKind.DATA, arg));
        this.framesWritten++;
        return true;
      }
      this.fullEvents++;
    }
    // A frame that can never fit must fail here, with its row, not later in flush().
    this.ring.checkFits(DATA_PREFIX_BYTES + len);
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

  /** Writes a marker carrying two numbers (a micro-batch's epoch and end offset). */
  writeMarker2(kind: number, a: number, b: number, arg = 0): boolean {
    const tag = makeTag(kind, arg);
    if (this.pending.length === 0) {
      const at = this.ring.reserve(2 * MARKER_PAYLOAD_BYTES);
      if (at >= 0) {
        this.ring.f64[at >> 3] = a;
        this.ring.f64[(at >> 3) + 1] = b;
        this.ring.commit(tag);
        return true;
      }
      this.fullEvents++;
    }
    this.pending.push({ tag, f0: a, f1: b, f2: 0, fields: 2, body: null });
    return false;
  }

  /** Writes a frame whose whole payload is one msgpack value (dead letters, results). */
  writeValue(kind: number, value: unknown, arg = 0): boolean {
    const body = this.encode(value);
    const tag = makeTag(kind, arg);
    if (this.pending.length === 0) {
      const at = this.ring.reserve(body.end - body.start);
      if (at >= 0) {
        copyIn(this.ring, at, body, body.start, body.end, this.view);
        this.ring.stage(tag);
        return true;
      }
      this.fullEvents++;
    }
    this.ring.checkFits(body.end - body.start);
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
      if (p.fields >= 2) this.ring.f64[f + 1] = p.f1;
      if (p.fields >= 3) this.ring.f64[f + 2] = p.f2;
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

  /**
   * Throws what {@link writeData} would throw for `row` (`RECORD_NOT_ENCODABLE`,
   * `RECORD_TOO_LARGE`), without writing it: for rows taken now and written later, when the ring
   * has room. The size checked is the row's as a plain map, within a few bytes of its size as a
   * record.
   */
  checkRow(row: unknown): void {
    this.checker ??= new Packr({ useRecords: false });
    let bytes: number;
    try {
      bytes = this.checker.pack(row).length;
    } catch (cause) {
      throw new MillraceError(
        ErrorCode.RECORD_NOT_ENCODABLE,
        `a row could not be encoded for the next stage: ${(cause as Error).message}`,
        { cause },
      );
    }
    this.ring.checkFits(DATA_PREFIX_BYTES + bytes);
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
  private scratch = Buffer.allocUnsafeSlow(4096);
  private scratchWords = new Int32Array(this.scratch.buffer, 0, 1024);

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

  /** The second number of a two-number marker. */
  markerValue2(): number {
    return this.ring.f64[(this.ring.payload >> 3) + 1]!;
  }

  private decodeFrom(offset: number): unknown {
    const ring = this.ring;
    const n = ring.length - offset;
    if (n + 4 > this.scratch.length) {
      this.scratch = Buffer.allocUnsafeSlow(Math.max(n + 4, this.scratch.length * 2));
      this.scratchWords = new Int32Array(this.scratch.buffer, 0, this.scratch.length >> 2);
    }
    // Copy out first: msgpackr's native string extractor refuses shared memory, and each refusal
    // is far more expensive than this copy (≈ 8 µs a row, measured). Payloads start 8-aligned, so small ones
    // go word by word (reading up to 3 bytes of the frame's padding, which stay in the frame).
    const from = ring.payload + offset;
    if (n <= WORD_COPY_MAX_BYTES) {
      const src = ring.i32;
      const dst = this.scratchWords;
      for (let i = from >> 2, k = 0, stop = (n + 3) >> 2; k < stop; i++, k++) dst[k] = src[i]!;
    } else {
      ring.buf.copy(this.scratch, 0, from, from + n);
    }
    return this.unpackr.unpack(this.scratch, n);
  }
}
