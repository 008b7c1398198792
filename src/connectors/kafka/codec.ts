import { pack, unpack } from 'msgpackr';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';

export type { KafkaCodec, KafkaDecoder, KafkaEncoder, KafkaEncoding } from './types.js';

import type { KafkaCodec, KafkaDecoder, KafkaEncoder, KafkaEncoding } from './types.js';

export function checkEncoding(what: string, value: unknown, fallback: KafkaEncoding): KafkaCodec {
  if (value === undefined) return fallback;
  if (typeof value === 'function') return value as KafkaCodec;
  if (value === 'json' || value === 'string' || value === 'buffer' || value === 'msgpack') return value;
  throw invalidArgument(
    `${what} must be 'json', 'string', 'buffer', 'msgpack' or a function, got ${JSON.stringify(value)}`,
  );
}

/** Bytes to a value; throws (a bad record) when they are not what the encoding says. */
export function decodeBytes(bytes: Buffer | Uint8Array | null, encoding: KafkaCodec): unknown {
  if (typeof encoding === 'function')
    return (encoding as KafkaDecoder)(bytes === null ? null : asBuffer(bytes));
  if (bytes === null) return null;
  switch (encoding) {
    case 'buffer':
      return asBuffer(bytes);
    case 'string':
      return asBuffer(bytes).toString('utf8');
    case 'json':
      return JSON.parse(asBuffer(bytes).toString('utf8'));
    case 'msgpack':
      return unpack(asBuffer(bytes));
  }
}

/**
 * A value to bytes. Without a user encoder: Buffers and byte arrays go as they are, strings as
 * UTF-8 under `json` too (an object `value` is JSON unless the encoding says otherwise).
 */
export function encodeValue(value: unknown, encoding: KafkaCodec): Buffer | string | null {
  if (typeof encoding === 'function') return (encoding as KafkaEncoder)(value);
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  switch (encoding) {
    case 'msgpack':
      return pack(value);
    case 'string':
      return String(value);
    case 'buffer':
      throw new MillraceError(
        ErrorCode.RECORD_NOT_ENCODABLE,
        `a 'buffer' encoding needs a Buffer or Uint8Array, got ${typeof value}`,
      );
    case 'json':
      return typeof value === 'string' ? value : JSON.stringify(value);
  }
}

function asBuffer(bytes: Buffer | Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Header values as text (Kafka headers are bytes; repeated names keep their last value). */
/** The header of a repartition topic's watermark record: the upstream task's watermark, ms as text. */
export const WATERMARK_HEADER = 'millrace-watermark';
/** The header naming the upstream task that wrote a watermark record. */
export const WATERMARK_FROM_HEADER = 'millrace-watermark-from';

export function headersOf(
  headers: Record<string, Buffer | Buffer[] | undefined> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined) return out;
  for (const [name, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const last = Array.isArray(v) ? v.at(-1) : v;
    if (last !== undefined) out[name] = last.toString('utf8');
  }
  return out;
}
