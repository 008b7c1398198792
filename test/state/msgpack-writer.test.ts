import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Packr, unpack } from 'msgpackr';
import { MsgpackWriter } from '../../src/state/msgpack-writer.js';

/** Writes `values` as one msgpack array, item by item. */
function written(values: readonly unknown[]): unknown {
  const w = new MsgpackWriter(4);
  w.arrayHeader(values.length);
  for (const v of values) w.value(v);
  return unpack(w.written());
}

describe('the msgpack writer of checkpoint pieces', () => {
  it('writes numbers at every width boundary, and −0, NaN and infinities, as the same numbers', () => {
    const edges = [0, 1, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 53, -1, -32, -33];
    const more = [-128, -129, -32_768, -32_769, -(2 ** 31), -(2 ** 31) - 1, 0.5, -0, Number.NaN, 1e300];
    const values = [...edges, ...more, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1_796_000_000_000];
    const back = written(values) as number[];
    for (const [i, v] of values.entries()) assert.ok(Object.is(back[i], v), `${v} came back as ${back[i]}`);
  });

  it('writes strings of any length and alphabet, and other values through msgpackr', () => {
    const values = [
      '',
      'card-12345',
      'x'.repeat(31),
      'y'.repeat(32),
      'é',
      'カード',
      '😀'.repeat(20),
      'z'.repeat(70_000),
    ];
    const others = [null, true, false, [1, 'a'], { a: 1 }, new Uint8Array([1, 2])];
    assert.deepEqual(written([...values, ...others]), [...values, ...others]);
  });

  it('is read back as msgpackr reads what it packs, for any sequence of JSON-like values', () => {
    // The state files' own options; msgpackr drops an object's own `__proto__` key either way.
    const packr = new Packr({ useRecords: false });
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), (generated) => {
        // Through JSON: no −0, which msgpackr writes as 0 and the writer keeps (tested above).
        const values = JSON.parse(JSON.stringify(generated)) as unknown[];
        assert.deepEqual(written(values), unpack(packr.pack(values)));
      }),
      { numRuns: 300 },
    );
  });
});
