import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeferredWatermarks } from '../../src/runtime/worker/deferred-watermarks.js';

function applied(d: DeferredWatermarks): [number, number, number, boolean][] {
  const out: [number, number, number, boolean][] = [];
  d.apply((channel, input, value, behind) => out.push([channel, input, value, behind]));
  return out;
}

describe('watermarks kept behind held rows', () => {
  it('keeps the latest value of each input of each channel, in the order they first came', () => {
    const d = new DeferredWatermarks();
    assert.equal(d.any, false);
    d.defer(0, 0, 100, false);
    d.defer(1, 0, 90, true);
    d.defer(0, 0, 120, true);
    d.defer(0, 1, 50, false);
    assert.equal(d.any, true);
    assert.deepEqual(applied(d), [
      [0, 0, 120, true],
      [1, 0, 90, true],
      [0, 1, 50, false],
    ]);
    assert.equal(d.any, false, 'applied once, then forgotten');
    assert.deepEqual(applied(d), []);
  });

  it('lets the task read 1 024 rows past them, then no more until they are applied', () => {
    const d = new DeferredWatermarks();
    d.defer(0, 0, 1, false);
    for (let i = 0; i < 1023; i++) d.rowRead();
    assert.equal(d.canDefer(), true);
    d.rowRead();
    assert.equal(d.canDefer(), false, 'the next watermark waits in its ring, and the task with it');
    applied(d);
    assert.equal(d.canDefer(), true, 'the count starts again with the next one kept');
  });
});
