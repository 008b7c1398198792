import { ErrorCode, MillraceError } from '../../errors.js';
import type { DoorbellTable } from './doorbell.js';
import {
  CAPACITY_SLOT,
  CONSUMER_BELL_SLOT,
  DATA_START_BYTE,
  DEFAULT_RING_CAPACITY,
  FRAME_HEADER_BYTES,
  FRAME_LENGTH_FIELD,
  FRAME_TAG_FIELD,
  frameBytes,
  HEAD_SLOT,
  MAX_RING_CAPACITY,
  MIN_RING_CAPACITY,
  PRODUCER_BELL_SLOT,
  TAG_KIND_MASK,
  TAIL_SLOT,
  WANT_SPACE_SLOT,
} from './ring-layout.js';

const PAD = 0;

/** Frames staged (or released lazily) before the position is published anyway. */
export const PUBLISH_EVERY = 16;

/** Allocates and initialises the shared memory of one ring (layout in ring-layout.ts). */
export function createRing(
  capacityBytes: number = DEFAULT_RING_CAPACITY,
  consumerBell = -1,
  producerBell = -1,
): SharedArrayBuffer {
  const capacity = roundCapacity(capacityBytes);
  const sab = new SharedArrayBuffer(DATA_START_BYTE + capacity);
  const i32 = new Int32Array(sab, 0, DATA_START_BYTE >> 2);
  i32[CAPACITY_SLOT] = capacity;
  i32[CONSUMER_BELL_SLOT] = consumerBell;
  i32[PRODUCER_BELL_SLOT] = producerBell;
  return sab;
}

function roundCapacity(bytes: number): number {
  if (!Number.isFinite(bytes) || bytes < MIN_RING_CAPACITY || bytes > MAX_RING_CAPACITY) {
    throw new MillraceError(
      ErrorCode.INVALID_ARGUMENT,
      `ring capacity must be between ${MIN_RING_CAPACITY} and ${MAX_RING_CAPACITY} bytes, got ${bytes}`,
    );
  }
  let c = MIN_RING_CAPACITY;
  while (c < bytes) c *= 2;
  return c;
}

/** Views shared by both ends. Typed arrays span the whole buffer so offsets are absolute. */
class RingView {
  readonly i32: Int32Array;
  readonly u8: Uint8Array;
  readonly f64: Float64Array;
  /** A Buffer over the same memory, for native `copy` into and out of the ring. */
  readonly buf: Buffer;
  readonly capacity: number;
  readonly mask: number;
  readonly maxFrameBytes: number;
  readonly consumerBell: number;
  readonly producerBell: number;

  constructor(
    readonly sab: SharedArrayBuffer,
    readonly bells: DoorbellTable | null,
  ) {
    this.i32 = new Int32Array(sab);
    this.u8 = new Uint8Array(sab);
    this.f64 = new Float64Array(sab, 0, sab.byteLength >> 3);
    this.buf = Buffer.from(sab);
    this.capacity = this.i32[CAPACITY_SLOT]!;
    this.mask = this.capacity - 1;
    this.maxFrameBytes = this.capacity >> 1;
    this.consumerBell = this.i32[CONSUMER_BELL_SLOT]!;
    this.producerBell = this.i32[PRODUCER_BELL_SLOT]!;
  }
}

/**
 * The writing end. Exactly one thread may own it. Writing a frame is two calls so the payload is
 * written in place: `reserve(n)` returns the byte offset to write `n` payload bytes at (or -1 when
 * the ring is full), then `commit(tag)` publishes the frame and rings the consumer.
 *
 * Hot path: no allocation; the head is re-read (an atomic load of the consumer's cache line) only
 * when the cached value says the ring might be full.
 */
export class RingProducer extends RingView {
  private tail: number;
  /** The tail the consumer can see (last value stored in TAIL_SLOT). */
  private published: number;
  private staged = 0;
  private cachedHead: number;
  private frameStart = 0;
  private frameSize = 0;

  constructor(sab: SharedArrayBuffer, bells: DoorbellTable | null = null) {
    super(sab, bells);
    this.tail = Atomics.load(this.i32, TAIL_SLOT);
    this.published = this.tail;
    this.cachedHead = Atomics.load(this.i32, HEAD_SLOT);
  }

  /** Largest payload one frame can carry. */
  get maxPayloadBytes(): number {
    return this.maxFrameBytes - FRAME_HEADER_BYTES;
  }

  /** Throws `RECORD_TOO_LARGE` when a frame of `payloadBytes` could never fit this ring. */
  checkFits(payloadBytes: number): void {
    if (frameBytes(payloadBytes) > this.maxFrameBytes) {
      throw new MillraceError(
        ErrorCode.RECORD_TOO_LARGE,
        `a frame of ${payloadBytes} bytes does not fit a ring of ${this.capacity} bytes ` +
          `(at most ${this.maxPayloadBytes}); raise the query option ringCapacityBytes`,
      );
    }
  }

  /**
   * Reserves room for a frame of `payloadBytes`. Returns the absolute byte offset of the payload,
   * or -1 when the ring is full; in that case WANT_SPACE is raised so the consumer rings this
   * producer's bell when it frees space.
   */
  reserve(payloadBytes: number): number {
    const size = frameBytes(payloadBytes);
    if (size > this.maxFrameBytes) this.checkFits(payloadBytes);
    let index = this.tail & this.mask;
    const contiguous = this.capacity - index;
    const needed = size <= contiguous ? size : contiguous + size;
    if (this.capacity - ((this.tail - this.cachedHead) | 0) < needed) {
      this.cachedHead = Atomics.load(this.i32, HEAD_SLOT);
      if (this.capacity - ((this.tail - this.cachedHead) | 0) < needed) {
        // Frames staged but not yet published would never be consumed: publish them first.
        this.publish();
        // Raise the flag, then look again: if the consumer freed space between our load and the
        // flag, it may not have seen the flag, so we must not go to sleep on a stale reading.
        Atomics.store(this.i32, WANT_SPACE_SLOT, 1);
        this.cachedHead = Atomics.load(this.i32, HEAD_SLOT);
        if (this.capacity - ((this.tail - this.cachedHead) | 0) < needed) return -1;
      }
    }
    if (size > contiguous) {
      // The frame does not fit before the end: cover the rest with a PAD frame (published together
      // with this frame by commit) and start at the beginning of the data area.
      const pad = (DATA_START_BYTE + index) >> 2;
      this.i32[pad + FRAME_LENGTH_FIELD] = contiguous - FRAME_HEADER_BYTES;
      this.i32[pad + FRAME_TAG_FIELD] = PAD;
      this.tail = (this.tail + contiguous) | 0;
      index = 0;
    }
    this.frameStart = DATA_START_BYTE + index;
    this.frameSize = size;
    this.i32[(this.frameStart >> 2) + FRAME_LENGTH_FIELD] = payloadBytes;
    return this.frameStart + FRAME_HEADER_BYTES;
  }

  /** Publishes the reserved frame (and any staged before it) and wakes the consumer if it is parked. */
  commit(tag: number): void {
    this.i32[(this.frameStart >> 2) + FRAME_TAG_FIELD] = tag;
    this.tail = (this.tail + this.frameSize) | 0;
    this.publish();
  }

  /**
   * Completes the reserved frame without publishing it yet: the consumer sees it at the next
   * `publish()`, which happens by itself every {@link PUBLISH_EVERY} frames and whenever the ring
   * looks full. Publishing is a sequentially consistent store that waits for the consumer's core to
   * give up the cache line; staging amortises it over a batch. Callers must `publish()` when they
   * stop writing (the end of a task's step), or staged frames wait.
   */
  stage(tag: number): void {
    this.i32[(this.frameStart >> 2) + FRAME_TAG_FIELD] = tag;
    this.tail = (this.tail + this.frameSize) | 0;
    if (++this.staged >= PUBLISH_EVERY) this.publish();
  }

  /** Makes every completed frame visible to the consumer, and rings it if it is parked. */
  publish(): void {
    if (this.published === this.tail) return;
    this.published = this.tail;
    this.staged = 0;
    // Publishing TAIL is the release point for the frames' bytes (see ring-layout.ts).
    Atomics.store(this.i32, TAIL_SLOT, this.tail);
    if (this.bells !== null && this.consumerBell >= 0) this.bells.ring(this.consumerBell);
  }

  /** Convenience for tests and markers: copies `payload` in as one frame. false when full. */
  tryWrite(tag: number, payload: Uint8Array): boolean {
    const at = this.reserve(payload.length);
    if (at < 0) return false;
    this.u8.set(payload, at);
    this.commit(tag);
    return true;
  }

  /** Bytes currently queued (for occupancy metrics). */
  usedBytes(): number {
    return (this.tail - Atomics.load(this.i32, HEAD_SLOT)) | 0;
  }
}

/**
 * The reading end. Exactly one thread may own it. `poll()` exposes the next frame through
 * `tag` / `length` / `payload` (absolute byte offset); `release()` hands its space back.
 */
export class RingConsumer extends RingView {
  private head: number;
  /** The head the producer can see (last value stored in HEAD_SLOT). */
  private released: number;
  private deferred = 0;
  private cachedTail: number;
  private currentSize = 0;
  /** Tag of the current frame (valid after poll() returned true). */
  tag = 0;
  /** Payload length of the current frame. */
  length = 0;
  /** Absolute byte offset of the current frame's payload. */
  payload = 0;

  constructor(sab: SharedArrayBuffer, bells: DoorbellTable | null = null) {
    super(sab, bells);
    this.head = Atomics.load(this.i32, HEAD_SLOT);
    this.released = this.head;
    this.cachedTail = Atomics.load(this.i32, TAIL_SLOT);
  }

  /** Is a frame ready? Cheap when the cached tail already says so. */
  hasFrame(): boolean {
    if (this.head !== this.cachedTail) return true;
    this.cachedTail = Atomics.load(this.i32, TAIL_SLOT);
    return this.head !== this.cachedTail;
  }

  /** Moves to the next frame. Returns false when the ring is empty. Call release() after use. */
  poll(): boolean {
    for (;;) {
      if (this.head === this.cachedTail) {
        this.cachedTail = Atomics.load(this.i32, TAIL_SLOT);
        if (this.head === this.cachedTail) {
          // Drained: hand back what was read before looking away.
          this.flushRelease();
          return false;
        }
      }
      const start = DATA_START_BYTE + (this.head & this.mask);
      const header = start >> 2;
      const length = this.i32[header + FRAME_LENGTH_FIELD]!;
      const tag = this.i32[header + FRAME_TAG_FIELD]!;
      if ((tag & TAG_KIND_MASK) === PAD) {
        this.head = (this.head + FRAME_HEADER_BYTES + length) | 0;
        continue;
      }
      this.tag = tag;
      this.length = length;
      this.payload = start + FRAME_HEADER_BYTES;
      this.currentSize = frameBytes(length);
      return true;
    }
  }

  /** Frees the current frame's space at once; wakes the producer if it is waiting for space. */
  release(): void {
    this.head = (this.head + this.currentSize) | 0;
    this.flushRelease();
  }

  /**
   * Frees the current frame's space lazily: the producer sees it every {@link PUBLISH_EVERY}
   * frames, when the ring is found empty, and at `flushRelease()`. Callers must `flushRelease()`
   * when they stop reading this ring (the end of a task's step), or a producer waiting for space
   * could wait forever.
   */
  releaseDeferred(): void {
    this.head = (this.head + this.currentSize) | 0;
    if (++this.deferred >= PUBLISH_EVERY) this.flushRelease();
  }

  /** Publishes the consumed position; wakes the producer if it is waiting for space. */
  flushRelease(): void {
    if (this.released === this.head) return;
    this.released = this.head;
    this.deferred = 0;
    Atomics.store(this.i32, HEAD_SLOT, this.head);
    // Checked after publishing HEAD: a producer that raised the flag before our store re-reads
    // HEAD after raising it, so one of the two sides always sees the other (see reserve()).
    if (Atomics.load(this.i32, WANT_SPACE_SLOT) !== 0) {
      Atomics.store(this.i32, WANT_SPACE_SLOT, 0);
      if (this.bells !== null && this.producerBell >= 0) this.bells.ringAlways(this.producerBell);
    }
  }

  /** Copies the current payload out of shared memory (decoders must not read shared memory). */
  copyPayload(target: Buffer, from = 0): number {
    const n = this.length - from;
    this.buf.copy(target, 0, this.payload + from, this.payload + this.length);
    return n;
  }
}

/**
 * How full a ring is, 0 to 1, read from any thread (the driver, for metrics): the bytes between
 * the consumer's published head and the producer's published tail, over the capacity.
 */
export function ringFill(sab: SharedArrayBuffer): number {
  const i32 = new Int32Array(sab, 0, CAPACITY_SLOT + 1);
  const used = (Atomics.load(i32, TAIL_SLOT) - Atomics.load(i32, HEAD_SLOT)) | 0;
  return used / i32[CAPACITY_SLOT]!;
}
