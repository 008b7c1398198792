/**
 * Record batches (message format v2) as stored bytes: reading the header fields the broker needs,
 * re-basing a batch at its log offset, and writing transaction control batches (COMMIT/ABORT markers).
 *
 * Layout: baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 |
 * attributes int16 | lastOffsetDelta int32 | firstTimestamp int64 | maxTimestamp int64 | producerId int64 |
 * producerEpoch int16 | baseSequence int32 | records. The CRC (CRC32C) covers attributes..end, so the
 * baseOffset can be patched without recomputing it.
 */
import { crc32C, type DecodedBatch, Decoder, decodeRecordBatch, Encoder, encodeRecord } from './kafkajs.js';

const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;
/** Bytes before the CRC-covered part: baseOffset, batchLength, partitionLeaderEpoch, magic, crc. */
const CRC_START = 21;
export const BATCH_HEADER_SIZE = 61;

/** Header fields of one stored batch. */
export interface BatchHeader {
  baseOffset: number;
  /** Whole batch size in bytes, including baseOffset and length fields. */
  size: number;
  magic: number;
  crcValid: boolean;
  lastOffsetDelta: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  transactional: boolean;
  control: boolean;
}

/** Reads the header of the batch starting at `at`, or null if fewer bytes than a whole batch remain. */
export function readBatchHeader(bytes: Buffer, at = 0): BatchHeader | null {
  if (bytes.length - at < BATCH_HEADER_SIZE) return null;
  const size = 12 + bytes.readInt32BE(at + 8);
  if (bytes.length - at < size) return null;
  const attributes = bytes.readInt16BE(at + 21);
  return {
    baseOffset: Number(bytes.readBigInt64BE(at)),
    size,
    magic: bytes.readInt8(at + 16),
    crcValid: bytes.readUInt32BE(at + 17) === crc32C(bytes.subarray(at + CRC_START, at + size)),
    lastOffsetDelta: bytes.readInt32BE(at + 23),
    maxTimestamp: Number(bytes.readBigInt64BE(at + 35)),
    producerId: Number(bytes.readBigInt64BE(at + 43)),
    producerEpoch: bytes.readInt16BE(at + 51),
    baseSequence: bytes.readInt32BE(at + 53),
    transactional: (attributes & TRANSACTIONAL) !== 0,
    control: (attributes & CONTROL) !== 0,
  };
}

/** Splits a produce request's records field into its batches (Kafka expects one; more are tolerated). */
export function splitBatches(bytes: Buffer): { header: BatchHeader; bytes: Buffer }[] | null {
  const out: { header: BatchHeader; bytes: Buffer }[] = [];
  for (let at = 0; at < bytes.length; ) {
    const header = readBatchHeader(bytes, at);
    if (!header) return null;
    out.push({ header, bytes: bytes.subarray(at, at + header.size) });
    at += header.size;
  }
  return out;
}

/** A copy of `bytes` with its baseOffset set to `baseOffset`. */
export function rebase(bytes: Buffer, baseOffset: number): Buffer {
  const copy = Buffer.from(bytes);
  copy.writeBigInt64BE(BigInt(baseOffset), 0);
  return copy;
}

/**
 * A control batch holding one transaction marker: key = (version 0, type 0 ABORT / 1 COMMIT),
 * value = (version 0, coordinatorEpoch), attributes = transactional | control, baseSequence -1.
 */
export function controlBatch(
  baseOffset: number,
  producerId: number,
  producerEpoch: number,
  commit: boolean,
): Buffer {
  const now = Date.now();
  const key = new Encoder(4).writeInt16(0).writeInt16(commit ? 1 : 0).buffer;
  const value = new Encoder(6).writeInt16(0).writeInt32(0).buffer;
  const body = new Encoder()
    .writeInt16(TRANSACTIONAL | CONTROL)
    .writeInt32(0)
    .writeInt64(now)
    .writeInt64(now)
    .writeInt64(producerId)
    .writeInt16(producerEpoch)
    .writeInt32(-1)
    .writeArray([encodeRecord({ key, value })], 'object');
  const batch = new Encoder().writeInt32(0).writeInt8(2).writeUInt32(crc32C(body.buffer)).writeEncoder(body);
  return new Encoder().writeInt64(baseOffset).writeBytes(batch.buffer).buffer;
}

/** Decodes a stored batch's records with kafkajs's decoder. */
export const decodeBatch = (bytes: Buffer): Promise<DecodedBatch> => decodeRecordBatch(new Decoder(bytes));
