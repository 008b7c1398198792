/**
 * Typed access to the parts of kafkajs's (CommonJS, untyped) protocol internals the broker reuses:
 * its Encoder/Decoder for the wire primitives, CRC32C, and its record and record-batch codecs. Reusing
 * them keeps the broker's byte layout identical to what kafkajs itself writes and reads.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** kafkajs's growable big-endian writer (protocol/encoder.js). Every write returns the encoder. */
export interface Encoder {
  readonly buffer: Buffer;
  size(): number;
  writeInt8(value: number): Encoder;
  writeInt16(value: number): Encoder;
  writeInt32(value: number): Encoder;
  writeUInt32(value: number): Encoder;
  writeInt64(value: number | bigint): Encoder;
  writeBoolean(value: boolean): Encoder;
  writeString(value: string | null): Encoder;
  writeBytes(value: Buffer | null): Encoder;
  writeBuffer(value: Buffer): Encoder;
  writeEncoder(value: Encoder): Encoder;
  writeArray(items: unknown[], type?: 'int32' | 'string' | 'object'): Encoder;
}

/** kafkajs's reader (protocol/decoder.js). `readInt64` yields a bigint. */
export interface Decoder {
  offset: number;
  readonly buffer: Buffer;
  readInt8(): number;
  readInt16(): number;
  readInt32(): number;
  readInt64(): bigint;
  readBoolean(): boolean;
  readString(): string | null;
  readBytes(): Buffer | null;
  readArray<T>(reader: (d: Decoder) => T): T[];
  canReadBytes(n: number): boolean;
}

/** One record as kafkajs's record decoder returns it. */
export interface DecodedRecord {
  offset: string;
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | Buffer[] | undefined>;
}

/** A record batch as kafkajs's batch decoder returns it. */
export interface DecodedBatch {
  firstOffset: string;
  isControlBatch: boolean;
  inTransaction: boolean;
  producerId: string;
  records: DecodedRecord[];
}

export const Encoder: new (initialSize?: number) => Encoder = require('kafkajs/src/protocol/encoder.js');
export const Decoder: new (buffer: Buffer) => Decoder = require('kafkajs/src/protocol/decoder.js');
export const crc32C: (buffer: Buffer) => number = require('kafkajs/src/protocol/recordBatch/crc32C/index.js');

/** Encodes one record (length-prefixed, as it sits inside a batch). */
export const encodeRecord: (record: {
  offsetDelta?: number;
  timestampDelta?: number;
  key: Buffer | null;
  value: Buffer | null;
}) => Encoder = require('kafkajs/src/protocol/recordBatch/record/v0/index.js');

/** Decodes one whole record batch (baseOffset, length, header, records; decompressing if needed). */
export const decodeRecordBatch: (
  decoder: Decoder,
) => Promise<DecodedBatch> = require('kafkajs/src/protocol/recordBatch/v0/decoder.js');
