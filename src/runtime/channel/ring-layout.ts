/**
 * Layout of a single-producer / single-consumer ring queue in one SharedArrayBuffer.
 *
 * ```
 *  byte 0    +-------------------------------------------------------------------+
 *            | TAIL_SLOT        producer-owned: bytes ever written (wraps at 2^32) |  one cache line
 *  byte 64   | HEAD_SLOT        consumer-owned: bytes ever consumed               |  one cache line
 *  byte 128  | WANT_SPACE_SLOT  producer sets to 1 when it found the ring full;   |  one cache line
 *            |                  the consumer clears it and rings the producer     |
 *  byte 192  | CAPACITY_SLOT, CONSUMER_BELL_SLOT, PRODUCER_BELL_SLOT (read-only)  |
 *  byte 256  +---------------------------- data area ------------------------------+
 *            | [len|tag|payload...pad8] [len|tag|payload...pad8] ... [len|PAD]     |
 *            +-------------------------------------------------------------------+
 *                 ^ head & mask                       ^ tail & mask
 * ```
 *
 * Invariants (positions are byte counters compared with 32-bit wrap-around arithmetic):
 * - `0 <= (tail - head) <= capacity`; the ring is empty when `tail == head`.
 * - The producer writes only in `[tail, head + capacity)`, the consumer reads only `[head, tail)`.
 * - Every frame starts on an 8-byte boundary and never wraps: when a frame does not fit before the
 *   end of the data area, the producer writes a PAD frame covering the rest and starts at 0.
 *   Because capacity is a power of two (and a multiple of 8) there is always room for a header.
 * - A frame is at most `capacity / 2` bytes, so a frame always fits once the ring drains.
 * - Header fields are written with plain stores before the producer publishes TAIL with
 *   `Atomics.store`; the consumer reads TAIL with `Atomics.load` before reading the frame, so the
 *   frame's bytes happen-before its consumption (and symmetrically for HEAD and reuse of space).
 */

/** Int32 index of the producer's position. */
export const TAIL_SLOT = 0;
/** Int32 index of the consumer's position (64 bytes from TAIL so they sit on separate cache lines). */
export const HEAD_SLOT = 16;
/** Int32 index of the flag the producer raises when it is waiting for space. */
export const WANT_SPACE_SLOT = 32;
/** Int32 index of the data-area capacity in bytes. */
export const CAPACITY_SLOT = 48;
/** Int32 index of the doorbell (host index) to ring when data arrives. */
export const CONSUMER_BELL_SLOT = 49;
/** Int32 index of the doorbell (host index) to ring when space frees up. */
export const PRODUCER_BELL_SLOT = 50;

/** Byte offset where the data area begins (a multiple of 64). */
export const DATA_START_BYTE = 256;

/** Frame header: `[payloadLength: int32][tag: int32]`, then the payload. */
export const FRAME_HEADER_BYTES = 8;
/** Int32 offset of the payload length within a frame header. */
export const FRAME_LENGTH_FIELD = 0;
/** Int32 offset of the tag within a frame header. */
export const FRAME_TAG_FIELD = 1;
/** Every frame starts on this boundary, so Float64 fields in payloads are aligned. */
export const FRAME_ALIGN = 8;

/** Smallest, default and largest data-area capacities: those of the `ringCapacityBytes` query option. */
export { DEFAULT_RING_CAPACITY, MAX_RING_CAPACITY, MIN_RING_CAPACITY } from '../../plan/query-options.js';

/**
 * The tag's low 8 bits are the frame kind; the upper 24 bits are an argument whose meaning depends
 * on the kind (source partition of a data row, task index on a result ring, ...).
 */
export const TAG_KIND_MASK = 0xff;
export const TAG_ARG_SHIFT = 8;
export const MAX_TAG_ARG = (1 << 23) - 1;

export function makeTag(kind: number, arg: number): number {
  return kind | (arg << TAG_ARG_SHIFT);
}

export function tagKind(tag: number): number {
  return tag & TAG_KIND_MASK;
}

export function tagArg(tag: number): number {
  return tag >>> TAG_ARG_SHIFT;
}

/** Bytes a frame with `payloadBytes` occupies in the data area, header and padding included. */
export function frameBytes(payloadBytes: number): number {
  return (FRAME_HEADER_BYTES + payloadBytes + FRAME_ALIGN - 1) & ~(FRAME_ALIGN - 1);
}
