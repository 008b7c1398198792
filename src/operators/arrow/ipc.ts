import { Buffer } from 'node:buffer';
import type { Data, RecordBatch, Schema } from 'apache-arrow';
import { arrow, vectorLoader } from './arrow-module.js';
import { vectorValues } from './vector-values.js';

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

/** What starts an encapsulated IPC message (before its metadata length) since Arrow 0.15. */
const CONTINUATION = -1;

/** A message: its decoded metadata, the metadata's bytes, where the message starts, its body. */
type MessageVisitor = (
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
function forEachMessage(
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

/** A record batch message seen before, recognised by its metadata's bytes. */
interface KnownMessage {
  readonly bodyLength: number;
  matches(meta: Uint8Array): boolean;
}

type NumberArray = Float64Array | Float32Array | Int32Array | BigInt64Array | Uint8Array;
type NumberArrayClass = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => NumberArray;

/** A known record batch message's layout: each column's type, array class and place. */
interface KnownColumn {
  readonly type: import('apache-arrow').DataType;
  readonly array: NumberArrayClass;
  readonly size: number;
  readonly offset: number;
}

export class ArrowDecoder {
  private schema: Schema | null = null;
  private struct: import('apache-arrow').Struct | null = null;
  /** The last record batch message of fixed-width columns without nulls (see {@link FixedLayout}). */
  private known:
    | (KnownMessage & { readonly columns: readonly KnownColumn[]; readonly length: number })
    | null = null;
  /** What the decoding in progress does with each batch: its row count and its columns' data. */
  private take: (length: number, children: Data[]) => void = () => {};

  /**
   * The record batches of one frame; they keep views of `bytes`, which must not change after.
   * Each message's vectors are read by Arrow's VectorLoader, but for a record batch message whose
   * metadata is byte for byte that of the last one of fixed-width columns: its vectors are views
   * of the body at the places that one's were. (Arrow's MessageReader would do the same through
   * a byte stream made for chunked input, which costs more than the rest for a batch of a few rows.)
   */
  decode(bytes: Uint8Array): RecordBatch[] {
    const out: RecordBatch[] = [];
    this.forEach(bytes, (b) => out.push(b));
    return out;
  }

  /**
   * Each record batch of one frame to `visit`, as {@link decode} makes them. The engine's hot
   * paths take batches this way: a list of them that lives as long as their use would be found
   * alive by most young-generation collections, and V8 then allocates such lists in the old
   * generation, where every batch they held would stay alive (and be promoted) until the next
   * full collection.
   */
  forEach(bytes: Uint8Array, visit: (batch: RecordBatch) => void): void {
    this.take = (length, children) => visit(this.batch(length, children));
    this.read(bytes, (length, values) => visit(this.batch(length, this.data(length, values))));
  }

  /** The batches of one frame as their columns' values (views of `bytes`, as {@link decode}'s). */
  forEachColumns(
    bytes: Uint8Array,
    visit: (length: number, columns: readonly ArrayLike<unknown>[]) => void,
  ): void {
    this.take = (length, children) => {
      const A = arrow();
      visit(
        length,
        children.map((d) => vectorValues(A.makeVector(d))),
      );
    };
    this.read(bytes, visit);
  }

  private read(bytes: Uint8Array, known: (length: number, values: NumberArray[]) => void): void {
    // Read for each message: a schema message or the first record batch changes it.
    forEachMessage(
      bytes,
      (m, meta, _start, body) => this.message(m, meta, body),
      (meta) => (this.known?.matches(meta) ? this.known.bodyLength : -1),
      (body) => {
        const k = this.known!;
        known(
          k.length,
          k.columns.map((c) => valuesAt(body, c, k.length)),
        );
      },
    );
  }

  private message(m: import('apache-arrow').Message, meta: Uint8Array, body: Uint8Array): void {
    const A = arrow();
    if (m.isSchema()) {
      this.schema = m.header()!;
      this.struct = new A.Struct(this.schema.fields);
      this.known = null;
      return;
    }
    if (!m.isRecordBatch()) throw new Error(`internal: unexpected Arrow message type ${m.headerType}`);
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
    this.take(header.length, children);
    if (this.known === null) {
      const columns = knownColumns(header, children);
      if (columns !== null) {
        const copy = meta.slice();
        this.known = {
          columns,
          length: header.length,
          bodyLength: m.bodyLength,
          matches: (next) => next.byteLength === copy.byteLength && Buffer.compare(next, copy) === 0,
        };
      }
    }
  }

  private data(length: number, values: readonly NumberArray[]): Data[] {
    const A = arrow();
    const columns = this.known!.columns;
    return values.map((v, c) => new A.Data(columns[c]!.type, 0, length, 0, [undefined, v, undefined]));
  }

  private batch(length: number, children: Data[]): RecordBatch {
    const A = arrow();
    const data = new A.Data(this.struct!, 0, length, 0, [undefined, undefined, undefined], children);
    return new A.RecordBatch(this.schema!, data);
  }
}

/** The layout of a record batch message whose columns are all fixed-width without nulls, or null. */
function knownColumns(
  header: { readonly length: number; readonly buffers: readonly { offset: number; length: number }[] },
  children: readonly Data[],
): KnownColumn[] | null {
  const A = arrow();
  if (header.buffers.length !== 2 * children.length) return null;
  const columns: KnownColumn[] = [];
  for (let c = 0; c < children.length; c++) {
    const d = children[c]!;
    const values = header.buffers[2 * c + 1]!;
    if (!(A.DataType.isFloat(d.type) || A.DataType.isInt(d.type))) return null;
    if (d.nullCount !== 0 || header.buffers[2 * c]!.length !== 0) return null;
    const array = (d.values as NumberArray).constructor as NumberArrayClass;
    const size = (d.values as NumberArray).BYTES_PER_ELEMENT;
    if (values.length !== header.length * size) return null;
    columns.push({ type: d.type, array, size, offset: values.offset });
  }
  return columns;
}

/** A column's values in a body: a view where they are aligned for it (always, in frames copied out of a ring). */
function valuesAt(body: Uint8Array, c: KnownColumn, length: number): NumberArray {
  const at = body.byteOffset + c.offset;
  return at % c.size === 0
    ? new c.array(body.buffer, at, length)
    : new c.array(body.slice(c.offset, c.offset + length * c.size).buffer, 0, length);
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
