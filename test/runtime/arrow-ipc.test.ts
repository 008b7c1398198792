import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { RecordBatch } from 'apache-arrow';
import { MillraceError } from '../../src/index.js';
import { arrow, loadArrow } from '../../src/operators/arrow/arrow-module.js';
import {
  batchRows,
  RowColumns,
  type RowMisfit,
  resolveType,
  resultVector,
  vectorValues,
} from '../../src/operators/arrow/columns.js';
import { ArrowEncoder } from '../../src/operators/arrow/ipc.js';
import { ArrowDecoder } from '../../src/operators/arrow/ipc-decoder.js';

before(async () => {
  await loadArrow();
});

/** One frame as it would cross a channel: the encoder's chunks, concatenated. */
function frame(encoder: ArrowEncoder, batches: readonly RecordBatch[]): Uint8Array {
  const { chunks, bytes } = encoder.encode(batches);
  const out = Buffer.concat(chunks);
  assert.equal(out.byteLength, bytes, 'bytes counts every byte of the chunks');
  return out;
}

function batchOf(
  rows: Record<string, unknown>[],
  declared: Record<string, 'float64' | 'utf8' | 'int64'> = {},
) {
  const names = Object.keys(rows[0]!);
  const misfits: RowMisfit[] = [];
  const { batch } = new RowColumns('test', names, declared).toBatch(rows, rows.length, misfits);
  assert.deepEqual(misfits, []);
  return batch;
}

function assertInvalidRow(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof MillraceError, `expected a MillraceError, got ${e}`);
    assert.equal(e.code, 'INVALID_ROW');
    assert.match(e.message, message);
    return true;
  });
}

describe('Arrow IPC frames', () => {
  it('carries the schema in the first frame and only record batches after it', () => {
    const encoder = new ArrowEncoder();
    const decoder = new ArrowDecoder();
    const first = frame(encoder, [batchOf([{ a: 1, b: 'x' }])]);
    const second = frame(encoder, [batchOf([{ a: 2, b: 'y' }])]);
    assert.deepEqual(batchRows(decoder.decode(first)), [{ a: 1, b: 'x' }]);
    assert.deepEqual(batchRows(decoder.decode(second)), [{ a: 2, b: 'y' }]);
    assert.ok(second.byteLength < first.byteLength, 'the later frame does not repeat the schema');
    assert.throws(() => new ArrowDecoder().decode(second), /record batch arrived before its schema/);
  });

  it('decodes the schema and field types the rows were built with', () => {
    const encoder = new ArrowEncoder();
    const [batch] = new ArrowDecoder().decode(
      frame(encoder, [batchOf([{ n: 1.5, s: 'x', i: 7n, b: true }], { i: 'int64' })]),
    );
    assert.deepEqual(
      batch!.schema.fields.map((f) => [f.name, String(f.type)]),
      [
        ['n', 'Float64'],
        ['s', 'Utf8'],
        ['i', 'Int64'],
        ['b', 'Bool'],
      ],
    );
    assert.deepEqual(batchRows([batch!]), [{ n: 1.5, s: 'x', i: 7n, b: true }]);
  });

  it('decodes several batches of one frame, in order', () => {
    const encoder = new ArrowEncoder();
    const batches = new ArrowDecoder().decode(
      frame(encoder, [batchOf([{ a: 1 }, { a: 2 }]), batchOf([{ a: 3 }]), batchOf([{ a: 4 }, { a: 5 }])]),
    );
    assert.deepEqual(
      batches.map((b) => b.numRows),
      [2, 1, 2],
    );
    assert.deepEqual(batchRows(batches), [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }, { a: 5 }]);
  });

  it('decodes a batch whose schema differs mid-stream, and the old schema again after it', () => {
    const encoder = new ArrowEncoder();
    const decoder = new ArrowDecoder();
    assert.deepEqual(batchRows(decoder.decode(frame(encoder, [batchOf([{ a: 1 }])]))), [{ a: 1 }]);
    assert.deepEqual(batchRows(decoder.decode(frame(encoder, [batchOf([{ a: 'one', c: true }])]))), [
      { a: 'one', c: true },
    ]);
    assert.deepEqual(batchRows(decoder.decode(frame(encoder, [batchOf([{ a: 2 }])]))), [{ a: 2 }]);
    const mixed = decoder.decode(
      frame(encoder, [batchOf([{ a: 3 }]), batchOf([{ x: 'z' }]), batchOf([{ a: 4 }])]),
    );
    assert.deepEqual(batchRows(mixed), [{ a: 3 }, { x: 'z' }, { a: 4 }]);
    assert.deepEqual(
      mixed.map((b) => b.schema.fields.map((f) => f.name)),
      [['a'], ['x'], ['a']],
    );
  });

  it('starts the frame after forget() with the schema again, which a fresh decoder can read', () => {
    const encoder = new ArrowEncoder();
    frame(encoder, [batchOf([{ a: 1 }])]); // encoded, never sent
    encoder.forget();
    const resent = frame(encoder, [batchOf([{ a: 2 }])]);
    assert.deepEqual(batchRows(new ArrowDecoder().decode(resent)), [{ a: 2 }]);
  });

  it('decodes more than 4096 frames through one encoder and one decoder', () => {
    const encoder = new ArrowEncoder();
    const decoder = new ArrowDecoder();
    // A string column: every batch goes through Arrow's writer (no fixed layout).
    const columns = new RowColumns('test', ['i', 's'], {});
    const total = 4096 + 4;
    const seen: number[] = [];
    const withSchema: number[] = [];
    for (let i = 0; i < total; i++) {
      const bytes = frame(encoder, [columns.toBatch([{ i, s: 'x' }], 1, []).batch]);
      for (const row of batchRows(decoder.decode(bytes))) seen.push(row.i as number);
      if (i % 1024 === 0 || i >= 4094) {
        try {
          new ArrowDecoder().decode(bytes);
          withSchema.push(i);
        } catch {
          // a frame of record batches only
        }
      }
    }
    assert.deepEqual(
      seen,
      Array.from({ length: total }, (_, i) => i),
    );
    assert.deepEqual(withSchema, [0, 4096], 'the schema again every 4096 batches, where a new writer starts');
  });

  it('decodes a frame of more than 4096 batches, each once and in order', () => {
    const columns = new RowColumns('test', ['i'], {});
    const batches = Array.from({ length: 4100 }, (_, i) => columns.toBatch([{ i }], 1, []).batch);
    const decoded = new ArrowDecoder().decode(frame(new ArrowEncoder(), batches));
    assert.equal(decoded.length, 4100);
    assert.deepEqual(
      batchRows(decoded).map((r) => r.i),
      batches.map((_, i) => i),
    );
  });
});

/** A batch of fixed-width columns: float64 `x`, int32 `n`, float32 `f` (odd sizes: padding). */
function fixedBatch(rows: number, from: number): RecordBatch {
  const A = arrow();
  return new A.RecordBatch({
    x: A.makeVector(Float64Array.from({ length: rows }, (_, i) => from + i + 0.5)).data[0]!,
    n: A.makeVector(Int32Array.from({ length: rows }, (_, i) => from - i)).data[0]!,
    f: A.makeVector(Float32Array.from({ length: rows }, (_, i) => (from + i) / 4)).data[0]!,
  });
}

/** Arrow's own stream of `batches` (its writer, from the schema message on), without the end marker. */
function arrowStream(batches: readonly RecordBatch[]): Uint8Array {
  const stream = arrow()
    .RecordBatchStreamWriter.writeAll(batches as RecordBatch[])
    .toUint8Array(true);
  return stream.subarray(0, stream.byteLength - 8);
}

describe('Arrow IPC messages of fixed-width columns', () => {
  it('are byte for byte what Arrow writes, for every row count, after the first of each', () => {
    const encoder = new ArrowEncoder();
    const batches = [1, 1, 3, 1, 3, 7, 7, 1].map((rows, k) => fixedBatch(rows, 10 * k));
    const frames = batches.map((b) => frame(encoder, [b]));
    assert.deepEqual(Buffer.concat(frames), Buffer.from(arrowStream(batches)));
  });

  it('written in place from rows are the bytes of the batch the rows make', () => {
    const names = ['a', 'b', 'c'];
    const rows = (k: number) => [1, 2, 3].map((i) => ({ a: k + i, b: -i / 3, c: k * i }));
    const inPlace = new ArrowEncoder();
    const built = new ArrowEncoder();
    const columns = new RowColumns('test', names, {});
    const reference = new RowColumns('test', names, {});
    const sent: Uint8Array[] = [];
    for (let k = 0; k < 4; k++) {
      const own =
        columns.encodeInPlace(rows(k), 3, inPlace) ?? inPlace.encode([columns.toBatch(rows(k), 3, []).batch]);
      const bytes = Buffer.concat(own.chunks);
      sent.push(bytes);
      assert.deepEqual(bytes, frame(built, [reference.toBatch(rows(k), 3, []).batch]), `frame ${k}`);
    }
    assert.equal(
      columns.encodeInPlace(rows(0), 3, new ArrowEncoder()),
      null,
      'not before the encoder has met the layout',
    );
    const decoder = new ArrowDecoder();
    assert.deepEqual(
      sent.flatMap((b) => batchRows(decoder.decode(b))),
      [0, 1, 2, 3].flatMap(rows),
    );
  });

  it('leave a row whose value is not a number to the batch path, which reports it', () => {
    const encoder = new ArrowEncoder();
    const columns = new RowColumns('op', ['a'], {});
    encoder.encode([columns.toBatch([{ a: 1 }], 1, []).batch]);
    assert.equal(columns.encodeInPlace([{ a: 'two' }], 1, encoder), null);
    const misfits: RowMisfit[] = [];
    columns.toBatch([{ a: 'two' }], 1, misfits);
    assert.equal(misfits.length, 1);
  });

  it('decode to the values Arrow reads, through a frame of several sizes, nulls and a new schema', () => {
    const A = arrow();
    const withNull = new A.RecordBatch({ x: A.vectorFromArray([1.5, null, 3], new A.Float64()).data[0]! });
    const parts = [fixedBatch(1, 0), fixedBatch(1, 1), fixedBatch(2, 5), fixedBatch(1, 9)];
    const encoder = new ArrowEncoder();
    const decoder = new ArrowDecoder();
    const got: Record<string, unknown>[] = [];
    for (const b of parts) got.push(...batchRows(decoder.decode(frame(encoder, [b]))));
    got.push(...batchRows(decoder.decode(frame(encoder, [withNull, fixedBatch(1, 20), fixedBatch(1, 21)]))));
    const expected = batchRows(A.tableFromIPC(arrowStream([...parts])).batches).concat(
      batchRows([withNull]),
      batchRows([fixedBatch(1, 20), fixedBatch(1, 21)]),
    );
    assert.deepEqual(got, expected);
  });

  it('decode to columns of values, as typed arrays where the column is numbers without nulls', () => {
    const encoder = new ArrowEncoder();
    const decoder = new ArrowDecoder();
    const seen: { length: number; x: unknown[]; n: unknown[] }[] = [];
    for (const k of [0, 1, 2]) {
      decoder.forEachColumns(frame(encoder, [fixedBatch(2, k)]), (length, columns) => {
        assert.ok(columns[0] instanceof Float64Array);
        assert.ok(columns[1] instanceof Int32Array);
        seen.push({ length, x: Array.from(columns[0]!), n: Array.from(columns[1]!) });
      });
    }
    assert.deepEqual(seen, [
      { length: 2, x: [0.5, 1.5], n: [0, -1] },
      { length: 2, x: [1.5, 2.5], n: [1, 0] },
      { length: 2, x: [2.5, 3.5], n: [2, 1] },
    ]);
  });
});

describe('RowColumns', () => {
  it('makes numbers float64, strings utf8, bigints int64 and booleans bool', () => {
    const misfits: RowMisfit[] = [];
    const rows = [
      { n: 1.5, s: 'a', i: 1n, b: true },
      { n: -2, s: 'b', i: 2n ** 62n, b: false },
    ];
    const { batch, kept } = new RowColumns('op', ['n', 's', 'i', 'b'], {}).toBatch(rows, 2, misfits);
    assert.equal(kept, null, 'every row is kept');
    assert.deepEqual(misfits, []);
    assert.deepEqual(
      batch.schema.fields.map((f) => String(f.type)),
      ['Float64', 'Utf8', 'Int64', 'Bool'],
    );
    assert.equal(batch.numRows, 2);
    assert.deepEqual(batchRows([batch]), rows);
  });

  it('builds only the named columns, in their order, from the first n rows', () => {
    const rows = [
      { a: 1, b: 2, c: 3 },
      { a: 4, b: 5, c: 6 },
      { a: 7, b: 8, c: 9 },
    ];
    const { batch } = new RowColumns('op', ['c', 'a'], {}).toBatch(rows, 2, []);
    assert.deepEqual(
      batch.schema.fields.map((f) => f.name),
      ['c', 'a'],
    );
    assert.deepEqual(batchRows([batch]), [
      { c: 3, a: 1 },
      { c: 6, a: 4 },
    ]);
  });

  it('gives declared columns their declared type', () => {
    const { batch } = new RowColumns('op', ['a', 'b'], { a: 'int64', b: 'int32' }).toBatch(
      [
        { a: 1, b: 2 },
        { a: 3n, b: -4 },
      ],
      2,
      [],
    );
    assert.deepEqual(
      batch.schema.fields.map((f) => String(f.type)),
      ['Int64', 'Int32'],
    );
    assert.deepEqual(batchRows([batch]), [
      { a: 1n, b: 2 },
      { a: 3n, b: -4 },
    ]);
  });

  it('reports a row whose value does not fit its inferred type, naming the owner and the column, and leaves it out', () => {
    const misfits: RowMisfit[] = [];
    const rows = [
      { a: 1, b: 'x' },
      { a: 'two', b: 'y' },
      { a: 3, b: 'z' },
    ];
    const { batch, kept } = new RowColumns("arrowUdf 'score'", ['a', 'b'], {}).toBatch(rows, 3, misfits);
    assert.deepEqual(kept, [0, 2]);
    assert.equal(misfits.length, 1);
    assert.equal(misfits[0]!.index, 1);
    assert.ok(misfits[0]!.error instanceof MillraceError);
    assert.equal(misfits[0]!.error.code, 'INVALID_ROW');
    assert.equal(
      misfits[0]!.error.message,
      `arrowUdf 'score': the value of column 'a' does not fit Float64: not a number ("two")`,
    );
    assert.deepEqual(batchRows([batch]), [
      { a: 1, b: 'x' },
      { a: 3, b: 'z' },
    ]);
  });

  it('reports values that do not fit a declared type, once per row', () => {
    const misfits: RowMisfit[] = [];
    const rows = [
      { a: 1, s: 'ok' },
      { a: 2 ** 40, s: 'big' },
      { a: 1.5, s: 7 },
      { a: 'x', s: 8 },
      { a: -5, s: 'fine' },
    ];
    const { batch, kept } = new RowColumns('op', ['a', 's'], { a: 'int32', s: 'utf8' }).toBatch(
      rows,
      5,
      misfits,
    );
    assert.deepEqual(kept, [0, 4]);
    assert.deepEqual(
      misfits.map((m) => [m.index, m.error.code]),
      [
        [1, 'INVALID_ROW'],
        [2, 'INVALID_ROW'],
        [3, 'INVALID_ROW'],
      ],
    );
    assert.match(misfits[0]!.error.message, /^op: the value of column 'a' does not fit Int32: out of range/);
    assert.match(misfits[1]!.error.message, /column 'a' does not fit Int32: not an integer \(1\.5\)/);
    assert.match(misfits[2]!.error.message, /column 'a' does not fit Int32: not an integer \("x"\)/);
    assert.deepEqual(batchRows([batch]), [
      { a: 1, s: 'ok' },
      { a: -5, s: 'fine' },
    ]);
  });

  it('reports 64-bit integers out of their range instead of wrapping them', () => {
    const misfits: RowMisfit[] = [];
    const rows = [
      { u: 1, i: 2n },
      { u: -1, i: 3n },
      { u: 4n, i: 2n ** 63n },
      { u: 2n ** 64n - 1n, i: -(2n ** 63n) },
    ];
    const { kept } = new RowColumns('op', ['u', 'i'], { u: 'uint64', i: 'int64' }).toBatch(rows, 4, misfits);
    assert.deepEqual(kept, [0, 3]);
    assert.match(misfits[0]!.error.message, /column 'u' does not fit Uint64: out of range/);
    assert.match(misfits[1]!.error.message, /column 'i' does not fit Int64: out of range/);
  });

  it('keeps the type a column got from its first batch for the batches after it', () => {
    const columns = new RowColumns('op', ['a'], {});
    columns.toBatch([{ a: 'first' }], 1, []);
    const misfits: RowMisfit[] = [];
    const { batch, kept } = columns.toBatch([{ a: 'second' }, { a: 2 }], 2, misfits);
    assert.deepEqual(kept, [0]);
    assert.match(misfits[0]!.error.message, /column 'a' does not fit Utf8: not a string \(2\)/);
    assert.deepEqual(batchRows([batch]), [{ a: 'second' }]);
  });

  it('keeps nulls and missing values as nulls', () => {
    const misfits: RowMisfit[] = [];
    const rows = [{ n: 1, s: 'a', b: true }, { n: null, s: null, b: null }, {}];
    const { batch, kept } = new RowColumns('op', ['n', 's', 'b'], {}).toBatch(rows, 3, misfits);
    assert.equal(kept, null);
    assert.deepEqual(misfits, []);
    assert.deepEqual(batchRows([batch]), [
      { n: 1, s: 'a', b: true },
      { n: null, s: null, b: null },
      { n: null, s: null, b: null },
    ]);
  });

  it('types a column that is null throughout a batch by its first value in a later one', () => {
    const columns = new RowColumns('op', ['a'], {});
    const first = columns.toBatch([{ a: null }], 1, []).batch;
    const second = columns.toBatch([{ a: 'now' }], 1, []).batch;
    assert.deepEqual(batchRows([first, second]), [{ a: null }, { a: 'now' }]);
    assert.equal(String(second.schema.fields[0]!.type), 'Utf8');
  });

  it('gives the same values for a second batch of numbers as for the first', () => {
    const columns = new RowColumns('op', ['x', 'y'], { x: 'float64' });
    const a = columns.toBatch(
      [
        { x: 1, y: 0.5 },
        { x: 2, y: -0.5 },
      ],
      2,
      [],
    );
    const b = columns.toBatch(
      [
        { x: 3, y: 1e300 },
        { x: -4, y: Number.NaN },
        { x: 5, y: 0 },
      ],
      3,
      [],
    );
    assert.equal(a.kept, null);
    assert.equal(b.kept, null);
    assert.deepEqual(
      b.batch.schema.fields.map((f) => [f.name, String(f.type)]),
      [
        ['x', 'Float64'],
        ['y', 'Float64'],
      ],
    );
    assert.deepEqual(batchRows([a.batch, b.batch]), [
      { x: 1, y: 0.5 },
      { x: 2, y: -0.5 },
      { x: 3, y: 1e300 },
      { x: -4, y: Number.NaN },
      { x: 5, y: 0 },
    ]);
    const decoded = new ArrowDecoder().decode(frame(new ArrowEncoder(), [a.batch, b.batch]));
    assert.deepEqual(batchRows(decoded), batchRows([a.batch, b.batch]));
  });

  it('still reports a misfit in a batch after batches of numbers only', () => {
    const columns = new RowColumns('op', ['x'], {});
    columns.toBatch([{ x: 1 }], 1, []);
    columns.toBatch([{ x: 2 }], 1, []);
    const misfits: RowMisfit[] = [];
    const { batch, kept } = columns.toBatch([{ x: 3 }, { x: 'four' }, null, { x: null }], 4, misfits);
    assert.deepEqual(kept, [0, 2, 3]);
    assert.deepEqual(
      misfits.map((m) => m.index),
      [1],
    );
    assert.deepEqual(batchRows([batch]), [{ x: 3 }, { x: null }, { x: null }]);
  });
});

describe('resultVector', () => {
  const float64 = () => resolveType('float64');

  it('takes a Float64Array for a float64 column as it is', () => {
    const v = resultVector(Float64Array.of(1, 2.5, -3), float64(), 3, 'score');
    assert.equal(String(v.type), 'Float64');
    assert.deepEqual([...v], [1, 2.5, -3]);
  });

  it('checks a Uint8Array for a bool or utf8 column value by value, never reading it as packed bits', () => {
    assert.throws(() => resultVector(Uint8Array.of(1, 0, 1), resolveType('bool'), 3, 'flag'), {
      code: 'INVALID_ROW',
      message: /flag returned a value that does not fit Bool at row 0: not a boolean/,
    });
    assert.throws(() => resultVector(Uint8Array.of(1, 2), resolveType('utf8'), 2, 'name'), {
      code: 'INVALID_ROW',
    });
    assert.deepEqual(
      [...resultVector([true, false, true], resolveType('bool'), 3, 'flag')],
      [true, false, true],
    );
  });

  it('takes an array, or a typed array of another kind, converting it to the declared type', () => {
    assert.deepEqual([...resultVector([1, null, 3], float64(), 3, 'score')], [1, null, 3]);
    assert.deepEqual([...resultVector(Int32Array.of(1, 2), float64(), 2, 'score')], [1, 2]);
    assert.deepEqual([...resultVector(['a', 'b'], resolveType('utf8'), 2, 'label')], ['a', 'b']);
    assert.deepEqual([...resultVector([true, false], resolveType('bool'), 2, 'flag')], [true, false]);
    const ints = resultVector([1, 2n], resolveType('int64'), 2, 'count');
    assert.equal(String(ints.type), 'Int64');
    assert.deepEqual([...ints], [1n, 2n]);
  });

  it('takes an Arrow Vector of the declared type', () => {
    const A = arrow();
    const vector = A.vectorFromArray(['x', null, 'z'], new A.Utf8());
    const v = resultVector(vector, resolveType('utf8'), 3, 'label');
    assert.deepEqual([...v], ['x', null, 'z']);
  });

  it('refuses a result of another length, naming the owner', () => {
    assertInvalidRow(
      () => resultVector(Float64Array.of(1), float64(), 3, "arrowUdf 'score'"),
      /^arrowUdf 'score' returned 1 values for a batch of 3 rows \(one value per row\)$/,
    );
    assertInvalidRow(() => resultVector([1, 2, 3, 4], float64(), 3, 'score'), /^score returned 4 values/);
    const A = arrow();
    assertInvalidRow(
      () => resultVector(A.vectorFromArray([1, 2], new A.Float64()), float64(), 3, 'score'),
      /^score returned 2 values for a batch of 3 rows/,
    );
  });

  it('refuses a value of the wrong type, naming the owner and the row', () => {
    assertInvalidRow(
      () => resultVector([1, 'two', 3], float64(), 3, 'score'),
      /^score returned a value that does not fit Float64 at row 1: not a number \("two"\)$/,
    );
    assertInvalidRow(
      () => resultVector([1, 2.5], resolveType('int32'), 2, 'count'),
      /^count returned a value that does not fit Int32 at row 1: not an integer/,
    );
    assertInvalidRow(() => resultVector([1, 'x'], resolveType('bool'), 2, 'flag'), /^flag returned a value/);
  });

  it('refuses an Arrow Vector of another type than declared', () => {
    const A = arrow();
    assertInvalidRow(
      () => resultVector(A.vectorFromArray(['a'], new A.Utf8()), float64(), 1, 'score'),
      /^score returned a vector of Utf8; it declares Float64$/,
    );
  });

  it('refuses anything that is not a vector, a typed array or an array', () => {
    for (const [result, got] of [
      [null, 'null'],
      [undefined, 'undefined'],
      [3, 'number'],
      [{ length: 1, 0: 1 }, 'object'],
      [new DataView(new ArrayBuffer(8)), 'object'],
    ] as const) {
      assertInvalidRow(
        () => resultVector(result, float64(), 1, 'score'),
        new RegExp(`^score must return an Arrow Vector, a typed array or an array, got ${got}$`),
      );
    }
  });
});

describe('batchRows and vectorValues', () => {
  it('turns record batches into plain objects, batch after batch', () => {
    const rows = batchRows([batchOf([{ a: 1, b: 'x' }]), batchOf([{ c: true }, { c: false }])]);
    assert.deepEqual(rows, [{ a: 1, b: 'x' }, { c: true }, { c: false }]);
    assert.ok(rows.every((r) => Object.getPrototypeOf(r) === Object.prototype));
    assert.deepEqual(batchRows([]), []);
  });

  it('gives nulls for nulls, and the values as they are otherwise', () => {
    const A = arrow();
    assert.deepEqual(Array.from(vectorValues(A.vectorFromArray([1, null, 3], new A.Float64()))), [
      1,
      null,
      3,
    ]);
    assert.deepEqual(Array.from(vectorValues(A.vectorFromArray(['a', null], new A.Utf8()))), ['a', null]);
    assert.deepEqual(Array.from(vectorValues(A.vectorFromArray([null, true], new A.Bool()))), [null, true]);
    assert.deepEqual(Array.from(vectorValues(A.vectorFromArray([1.5, 2], new A.Float64()))), [1.5, 2]);
    assert.deepEqual(Array.from(vectorValues(A.vectorFromArray([5n], new A.Int64()))), [5n]);
  });
});

describe('resolveType', () => {
  it('resolves every plan type name to the Arrow type of that name', () => {
    const expected: Record<string, string> = {
      float64: 'Float64',
      float32: 'Float32',
      int8: 'Int8',
      int16: 'Int16',
      int32: 'Int32',
      int64: 'Int64',
      uint8: 'Uint8',
      uint16: 'Uint16',
      uint32: 'Uint32',
      uint64: 'Uint64',
      utf8: 'Utf8',
      bool: 'Bool',
    };
    for (const [name, type] of Object.entries(expected)) {
      assert.equal(String(resolveType(name as never)), type, name);
    }
  });

  it('passes an Arrow DataType through as it is', () => {
    const A = arrow();
    const type = new A.Float32();
    assert.equal(resolveType(type), type);
  });
});
