import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RowQueue } from '../../src/operators/arrow/held-rows.js';
import type { RowMetaFields } from '../../src/operators/contract.js';

const meta = (i: number): RowMetaFields => ({
  sourceTime: 1000 + i,
  readTime: 2000 + i,
  origin: i,
  sourceIndex: 1,
  sourcePartition: i % 3,
});

function queued(n: number): RowQueue {
  const q = new RowQueue();
  for (let i = 0; i < n; i++) q.add({ i }, meta(i));
  return q;
}

describe('the rows an Arrow operator holds before a batch', () => {
  it('hands out the first rows with their metadata, in order, and keeps the rest', () => {
    const q = queued(5);
    const first = q.take(2);
    assert.deepEqual(first.rows, [{ i: 0 }, { i: 1 }]);
    const m = meta(99);
    first.restore(1, m);
    assert.deepEqual(m, meta(1));
    assert.equal(q.length, 3);
    q.add({ i: 5 }, meta(5));
    const rest = q.take(10);
    assert.deepEqual(
      rest.rows.map((r) => (r as { i: number }).i),
      [2, 3, 4, 5],
    );
    rest.restore(3, m);
    assert.deepEqual(m, meta(5));
    assert.equal(q.length, 0);
  });

  it('puts a batch back in front of the rows that came after it', () => {
    const q = queued(4);
    const batch = q.take(3);
    q.putBack(batch);
    assert.equal(q.length, 4);
    const all = q.take(4);
    assert.deepEqual(
      all.rows.map((r) => (r as { i: number }).i),
      [0, 1, 2, 3],
    );
    const m = meta(99);
    for (let i = 0; i < 4; i++) {
      all.restore(i, m);
      assert.deepEqual(m, meta(i), `row ${i} keeps its metadata`);
    }
  });
});
