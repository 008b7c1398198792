import { arrow } from './arrow-module.js';

/**
 * Arrow IPC stream messages across a channel, one frame per call. The first frame of a channel,
 * and the first after the schema changes, carry the schema message before the record batches;
 * the others carry record batch messages only (an IPC stream split into frames, never ended).
 */

/** What starts an encapsulated IPC message (before its metadata length) since Arrow 0.15. */
const CONTINUATION = -1;

/** A message: its decoded metadata, the metadata's bytes, where the message starts, its body. */
export type MessageVisitor = (
  m: import('apache-arrow').Message,
  meta: Uint8Array,
  start: number,
  body: Uint8Array,
) => void;

/**
 * Visits the encapsulated IPC messages of `bytes` (a continuation marker, the metadata's length,
 * the metadata, the body), each message's metadata read by Arrow's `Message.decode`, but for
 * those `recognise` knows by their metadata's bytes (it answers their body's length, else −1):
 * their body goes to `visitKnown`.
 */
export function forEachMessage(
  bytes: Uint8Array,
  visit: MessageVisitor,
  recognise?: (meta: Uint8Array) => number,
  visitKnown?: (body: Uint8Array) => void,
): void {
  const A = arrow();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 0;
  while (p + 4 <= bytes.byteLength) {
    const start = p;
    let length = view.getInt32(p, true);
    p += 4;
    if (length === CONTINUATION) {
      length = view.getInt32(p, true);
      p += 4;
    }
    if (length === 0) break;
    const meta = bytes.subarray(p, p + length);
    p += length;
    const known = recognise === undefined ? -1 : recognise(meta);
    if (known >= 0) {
      const body = bytes.subarray(p, p + known);
      p += known;
      visitKnown!(body);
      continue;
    }
    const m = A.Message.decode(meta);
    const body = bytes.subarray(p, p + m.bodyLength);
    p += m.bodyLength;
    visit(m, meta, start, body);
  }
}

export type NumberArray = Float64Array | Float32Array | Int32Array | BigInt64Array | Uint8Array;
export type NumberArrayClass = new (
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
) => NumberArray;
