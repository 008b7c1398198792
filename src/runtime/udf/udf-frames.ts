import { isErrorCode, MillraceError, type SerializedError } from '../../errors.js';
import type { RingConsumer, RingProducer } from '../channel/spsc-ring.js';

/**
 * Frames between a task's Arrow operator and the UDF thread that runs it: requests and answers
 * are Arrow IPC messages (`DATA`), a failed batch's answer is its error as JSON (`UDF_ERROR`).
 * A task sends several requests ahead; the UDF thread answers them in order.
 */

/** Writes one frame of `chunks` (`bytes` in all); false when the ring has no room now. */
export function writeChunks(
  ring: RingProducer,
  kind: number,
  chunks: readonly Uint8Array[],
  bytes: number,
): boolean {
  const at = ring.reserve(bytes);
  if (at < 0) return false;
  let p = at;
  for (const c of chunks) {
    ring.u8.set(c, p);
    p += c.byteLength;
  }
  ring.commit(kind);
  return true;
}

/** The current frame's payload, copied out of shared memory (Arrow keeps views of it). */
export function copyFrame(ring: RingConsumer): Uint8Array {
  const out = new Uint8Array(ring.length);
  out.set(ring.u8.subarray(ring.payload, ring.payload + ring.length));
  return out;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The payload of a `UDF_ERROR` frame. */
export function errorFrame(error: SerializedError): Uint8Array {
  return encoder.encode(JSON.stringify(error));
}

/**
 * The error a UDF thread answered with: an engine error (a result of the wrong length or type)
 * keeps its code; an error user code threw comes back as an Error of its name, message and stack.
 */
export function readError(bytes: Uint8Array): Error {
  return answeredError(JSON.parse(decoder.decode(bytes)) as SerializedError);
}

/** The error an Arrow operator's function was answered with (see {@link readError}). */
export function answeredError(s: SerializedError): Error {
  if (isErrorCode(s.code) && !s.userCode) return new MillraceError(s.code, s.message);
  const e = Object.assign(new Error(s.message), { name: s.name });
  if (s.stack !== undefined) e.stack = s.stack;
  return e;
}
