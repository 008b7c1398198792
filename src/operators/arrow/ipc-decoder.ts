import { Buffer } from 'node:buffer';
import type { Data, RecordBatch, Schema } from 'apache-arrow';
import { arrow, vectorLoader } from './arrow-module.js';
import { forEachMessage, type NumberArray, type NumberArrayClass } from './ipc-messages.js';
import { vectorValues } from './vector-values.js';

/** A record batch message seen before, recognised by its metadata's bytes. */
interface KnownMessage {
  readonly bodyLength: number;
  matches(meta: Uint8Array): boolean;
}

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
  /** The last record batch message of fixed-width columns without nulls (see FixedLayout in ipc.ts). */
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
