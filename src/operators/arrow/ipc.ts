import type { RecordBatch, Schema } from 'apache-arrow';
import { arrow, vectorLoader } from './arrow-module.js';

/**
 * Arrow IPC stream messages across a channel, one frame per call. The first frame of a channel,
 * and the first after the schema changes, carry the schema message before the record batches;
 * the others carry record batch messages only (an IPC stream split into frames, never ended).
 */
/**
 * Batches one writer writes before the encoder starts another (with the schema again): Arrow's
 * writer keeps a block entry per batch for a file footer a stream never writes, which would grow
 * for the life of a query.
 */
const BATCHES_PER_WRITER = 4096;

export class ArrowEncoder {
  private writer: import('apache-arrow').RecordBatchStreamWriter | null = null;
  private written = 0;
  private schema: Schema | null = null;
  private readonly sink = captureQueue();

  /** The last encoding was not sent: the next one starts with the schema again. */
  forget(): void {
    this.writer = null;
    this.schema = null;
  }

  /** The IPC messages of `batches` (schema messages included where needed), as chunks. */
  encode(batches: readonly RecordBatch[]): { chunks: Uint8Array[]; bytes: number } {
    const { sink } = this;
    sink.chunks = [];
    sink.bytes = 0;
    for (const batch of batches) {
      if (
        this.writer === null ||
        this.written >= BATCHES_PER_WRITER ||
        !sameSchema(batch.schema, this.schema!)
      ) {
        this.written = 0;
        // A new writer starts with the schema message and writes no end-of-stream marker.
        this.writer = new (arrow().RecordBatchStreamWriter)({ autoDestroy: false });
        this.writer.reset(sink.queue, batch.schema);
        this.schema = batch.schema;
      }
      this.writer.write(batch);
      this.written++;
    }
    return { chunks: sink.chunks, bytes: sink.bytes };
  }
}

/** What starts an encapsulated IPC message (before its metadata length) since Arrow 0.15. */
const CONTINUATION = -1;

export class ArrowDecoder {
  private schema: Schema | null = null;
  private struct: import('apache-arrow').Struct | null = null;

  /**
   * The record batches of one frame; they keep views of `bytes`, which must not change after.
   * The frame is a run of encapsulated IPC messages (a continuation marker, the metadata's length,
   * the metadata, the body); each message's metadata is read by Arrow's `Message.decode` and its
   * vectors by Arrow's VectorLoader. Arrow's MessageReader would do the same through a byte stream
   * made for chunked input, which costs more than the rest for a batch of a few rows.
   */
  decode(bytes: Uint8Array): RecordBatch[] {
    const A = arrow();
    const out: RecordBatch[] = [];
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let p = 0;
    while (p + 4 <= bytes.byteLength) {
      let length = view.getInt32(p, true);
      p += 4;
      if (length === CONTINUATION) {
        length = view.getInt32(p, true);
        p += 4;
      }
      if (length === 0) break;
      const m = A.Message.decode(bytes.subarray(p, p + length));
      p += length;
      const body = bytes.subarray(p, p + m.bodyLength);
      p += m.bodyLength;
      if (m.isSchema()) {
        this.schema = m.header()!;
        this.struct = new A.Struct(this.schema.fields);
      } else if (m.isRecordBatch()) {
        const schema = this.schema;
        if (schema === null) throw new Error('internal: an Arrow record batch arrived before its schema');
        const header = m.header()!;
        const children = new (vectorLoader())(
          body,
          header.nodes,
          header.buffers,
          new Map(),
          schema.metadataVersion,
          header.variadicBufferCounts,
        ).visitMany(schema.fields.map((f) => f.type));
        const data = new A.Data(
          this.struct!,
          0,
          header.length,
          0,
          [undefined, undefined, undefined],
          children,
        );
        out.push(new A.RecordBatch(schema, data));
      } else {
        throw new Error(`internal: unexpected Arrow message type ${m.headerType}`);
      }
    }
    return out;
  }
}

/** Schemas with the same field names and types, in order (what the decoder needs to be told). */
function sameSchema(a: Schema, b: Schema): boolean {
  if (a === b) return true;
  if (a.fields.length !== b.fields.length) return false;
  for (let i = 0; i < a.fields.length; i++) {
    const fa = a.fields[i]!;
    const fb = b.fields[i]!;
    if (fa.name !== fb.name || fa.nullable !== fb.nullable || String(fa.type) !== String(fb.type))
      return false;
  }
  return true;
}

/** An Arrow byte queue whose writes land in `chunks` synchronously (the writer's own sink type). */
function captureQueue() {
  const state = {
    chunks: [] as Uint8Array[],
    bytes: 0,
    queue: null as unknown as import('apache-arrow').AsyncByteQueue,
  };
  class Capture extends arrow().AsyncByteQueue {
    override write(value: ArrayBufferView | ArrayBufferLike | string): void {
      const chunk = value as Uint8Array;
      if (chunk.byteLength === 0) return;
      state.chunks.push(chunk);
      state.bytes += chunk.byteLength;
    }
  }
  state.queue = new Capture();
  return state;
}
