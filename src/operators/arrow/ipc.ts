import { Buffer } from 'node:buffer';
import type { Data, RecordBatch, Schema } from 'apache-arrow';
import { arrow } from './arrow-module.js';
import { forEachMessage, type NumberArray, type NumberArrayClass } from './ipc-messages.js';

/** The encoding end of Arrow IPC frames (see ipc-messages.ts; the decoding end: ipc-decoder.ts). */

/**
 * Batches one writer writes before the encoder starts another (with the schema again): Arrow's
 * writer keeps a block entry per batch for a file footer a stream never writes, which would grow
 * for the life of a query.
 */
const BATCHES_PER_WRITER = 4096;

/**
 * The record batch message of a batch whose columns are all fixed-width numbers without nulls
 * depends on its row count only: its metadata (the continuation marker, the metadata's length and
 * the flatbuffer) is the same bytes for every batch of that many rows, and each column's values
 * lie at the same place in its body. Both ends keep that message's layout, taken from what Arrow
 * wrote or read the first time, and then move the values only: a batch of a few rows costs a copy
 * of its values, where Arrow's writer and reader build and parse the metadata for each one.
 */
interface FixedLayout {
  /** Everything before the body: continuation marker, metadata length, metadata. */
  readonly head: Uint8Array;
  readonly bodyLength: number;
  /** Where each column's values start in the body. */
  readonly offsets: readonly number[];
  /** Where each column's values start in the message, in float64s (buffers are 8-byte aligned). */
  readonly starts: readonly number[];
}

/** Row counts whose layout an encoder keeps at most (a query's batches have few distinct sizes). */
const LAYOUTS_KEPT = 256;

/** Encoded messages: chunks to write one after the other, `bytes` in all. */
export interface Encoded {
  readonly chunks: Uint8Array[];
  readonly bytes: number;
}

/**
 * A record batch message of a known layout, its metadata written, for the caller to fill: column
 * `c`'s float64 values go at `f64[starts[c]]` on.
 */
export interface FixedMessage {
  readonly bytes: Uint8Array;
  readonly f64: Float64Array;
  readonly starts: readonly number[];
}

/** A schema and the struct type of its record batches (what a batch's data is built on). */
export interface BatchSchema {
  readonly schema: Schema;
  readonly struct: import('apache-arrow').Struct;
}

/**
 * A record batch as its columns and schema: what the encoder writes without building the batch
 * (Arrow's RecordBatch copies its schema's fields each time one is made).
 */
export interface ColumnsBatch {
  readonly schema: BatchSchema;
  readonly length: number;
  readonly children: Data[];
}

export class ArrowEncoder {
  private writer: import('apache-arrow').RecordBatchStreamWriter | null = null;
  private written = 0;
  private schema: Schema | null = null;
  private readonly sink = captureQueue();
  /** Layouts of this writer's schema by row count (see {@link FixedLayout}). */
  private readonly layouts = new Map<number, FixedLayout>();

  /** The last encoding was not sent: the next one starts with the schema again. */
  forget(): void {
    this.writer = null;
    this.schema = null;
    this.layouts.clear();
  }

  /** The IPC messages of `batches` (schema messages included where needed), as chunks. */
  encode(batches: readonly (RecordBatch | ColumnsBatch)[]): Encoded {
    this.sink.chunks = [];
    this.sink.bytes = 0;
    for (const b of batches) {
      if ('children' in b) {
        this.put(b.schema.schema, b.length, b.children, true, () => {
          const A = arrow();
          const data = new A.Data(
            b.schema.struct,
            0,
            b.length,
            0,
            [undefined, undefined, undefined],
            b.children,
          );
          return new A.RecordBatch(b.schema.schema, data);
        });
      } else {
        const whole = b.data.offset === 0 && b.data.nullCount === 0;
        this.put(b.schema, b.numRows, b.data.children, whole, () => b);
      }
    }
    return this.sink;
  }

  /**
   * A message for a batch of `rows` rows of `schema` to be filled in place, when this encoder has
   * sent that schema and met that row count before with fixed-width columns (null otherwise: the
   * caller builds the batch and {@link encode}s it).
   */
  fixedMessage(schema: Schema, rows: number): FixedMessage | null {
    if (this.writer === null || !sameSchema(schema, this.schema!)) return null;
    const layout = this.layouts.get(rows);
    if (layout === undefined) return null;
    const buffer = new ArrayBuffer(layout.head.byteLength + layout.bodyLength);
    const bytes = new Uint8Array(buffer);
    bytes.set(layout.head);
    return { bytes, f64: new Float64Array(buffer), starts: layout.starts };
  }

  private put(
    schema: Schema,
    rows: number,
    children: readonly Data[],
    whole: boolean,
    batch: () => RecordBatch,
  ): void {
    const { sink } = this;
    const sent = this.writer !== null && sameSchema(schema, this.schema!);
    const fixed = whole && fixedColumns(children, rows);
    const layout = sent && fixed ? this.layouts.get(rows) : undefined;
    if (layout !== undefined) {
      fill(layout, children, sink);
      return;
    }
    if (!sent || this.written >= BATCHES_PER_WRITER) {
      this.written = 0;
      this.layouts.clear();
      // A new writer starts with the schema message and writes no end-of-stream marker.
      this.writer = new (arrow().RecordBatchStreamWriter)({ autoDestroy: false });
      this.writer.reset(sink.queue, schema);
      this.schema = schema;
    }
    const from = sink.chunks.length;
    this.writer!.write(batch());
    this.written++;
    if (fixed && this.layouts.size < LAYOUTS_KEPT) {
      const layout = layoutOf(concat(sink.chunks.slice(from)), children);
      if (layout !== null) this.layouts.set(rows, layout);
    }
  }
}

/** Messages of at most this many bytes are built whole; longer ones are sent as chunks. */
const BUILD_WHOLE_BYTES = 4096;
const ZEROS = new Uint8Array(8);

/**
 * A record batch message of `layout`'s row count, as chunks: its metadata, then the columns'
 * values at their places. A small message is built whole, float64 values copied one by one
 * (reading a small typed array's `buffer` would move its storage off the heap, which costs more
 * than the copy); a larger one is its metadata and views of the values, with padding between.
 */
function fill(
  layout: FixedLayout,
  children: readonly Data[],
  sink: { chunks: Uint8Array[]; bytes: number },
): void {
  const { head, offsets, bodyLength } = layout;
  sink.bytes += head.byteLength + bodyLength;
  if (head.byteLength + bodyLength > BUILD_WHOLE_BYTES) {
    sink.chunks.push(head);
    let p = 0;
    for (let c = 0; c < children.length; c++) {
      const v = children[c]!.values as NumberArray;
      if (offsets[c]! > p) sink.chunks.push(ZEROS.subarray(0, offsets[c]! - p));
      sink.chunks.push(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
      p = offsets[c]! + v.byteLength;
    }
    if (bodyLength > p) sink.chunks.push(ZEROS.subarray(0, bodyLength - p));
    return;
  }
  const buffer = new ArrayBuffer(head.byteLength + bodyLength);
  const bytes = new Uint8Array(buffer);
  bytes.set(head);
  const f64 = new Float64Array(buffer);
  for (let c = 0; c < children.length; c++) {
    const v = children[c]!.values as NumberArray;
    if (v instanceof Float64Array) {
      const o = layout.starts[c]!;
      for (let i = 0; i < v.length; i++) f64[o + i] = v[i]!;
    } else {
      const View = v.constructor as NumberArrayClass;
      (new View(buffer, head.byteLength + offsets[c]!, v.length) as Float64Array).set(
        v as unknown as Float64Array,
      );
    }
  }
  sink.chunks.push(bytes);
}

/** Whether every column is `rows` fixed-width numbers without nulls, from offset 0. */
function fixedColumns(children: readonly Data[], rows: number): boolean {
  const A = arrow();
  for (const d of children) {
    if (!(A.DataType.isFloat(d.type) || A.DataType.isInt(d.type))) return false;
    if (d.offset !== 0 || d.nullCount !== 0 || d.length !== rows || d.values.length !== rows) return false;
  }
  return true;
}

/**
 * The layout of a batch's record batch message in `written` (the bytes Arrow's writer wrote for
 * it, a schema message first or not), or null when the message is not laid out as expected.
 */
function layoutOf(written: Uint8Array, children: readonly Data[]): FixedLayout | null {
  let found: FixedLayout | null = null;
  forEachMessage(written, (m, meta, start, body) => {
    if (!m.isRecordBatch()) return;
    const buffers = m.header()!.buffers;
    if (buffers.length !== 2 * children.length) return;
    const metaEnd = meta.byteOffset - written.byteOffset + meta.byteLength;
    const head = written.slice(start, metaEnd);
    const offsets: number[] = [];
    for (let c = 0; c < children.length; c++) {
      const validity = buffers[2 * c]!;
      const values = buffers[2 * c + 1]!;
      if (validity.length !== 0 || values.length !== children[c]!.values.byteLength) return;
      if (values.offset % 8 !== 0 || head.byteLength % 8 !== 0 || body.byteLength % 8 !== 0) return;
      offsets.push(values.offset);
    }
    const starts = offsets.map((o) => (head.byteLength + o) / 8);
    found = { head, bodyLength: body.byteLength, offsets, starts };
  });
  return found;
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  return Buffer.concat(chunks);
}

/** Schemas with the same field names and types, in order (what the decoder needs to be told). */
function sameSchema(a: Schema, b: Schema): boolean {
  if (a === b) return true;
  if (a.fields.length !== b.fields.length) return false;
  for (let i = 0; i < a.fields.length; i++) {
    const fa = a.fields[i]!;
    const fb = b.fields[i]!;
    if (
      fa.name !== fb.name ||
      fa.nullable !== fb.nullable ||
      (fa.type !== fb.type && String(fa.type) !== String(fb.type))
    )
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
