import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WatermarkTracker } from '../../src/runtime/worker/watermark-tracker.js';

/** Two watermark inputs, both kept time by; input 0 relayed on channels 0 and 1, input 1 not. */
const tracker = (policy: 'min' | 'max' = 'min') =>
  new WatermarkTracker(2, [0, 1], policy, false, [undefined, undefined], [[0, 1], []], 3);

describe('the watermark tracker', () => {
  it('takes a relayed value only once every channel relaying it delivered it', () => {
    const t = tracker('max');
    assert.equal(t.fromChannel(1, 0, 5_000, 0), false, 'channel 0 may still carry rows before it');
    assert.equal(t.watermark, Number.NEGATIVE_INFINITY);
    assert.equal(t.fromChannel(0, 0, 5_000, 0), true);
    assert.equal(t.watermark, 5_000);
  });

  it('takes the smallest value the relaying channels delivered, and lets an ended channel go', () => {
    const t = tracker('max');
    t.fromChannel(0, 0, 9_000, 0);
    t.fromChannel(1, 0, 4_000, 0);
    assert.equal(t.watermark, 4_000);
    assert.equal(t.channelEnded(1, 0), true);
    assert.equal(t.watermark, 9_000);
  });

  it("combines values from the watermark operator's own tasks by the maximum, at once", () => {
    const t = tracker('max');
    assert.equal(t.fromChannel(2, 1, 7_000, 0), true, 'channel 2 is not a relay of input 1');
    t.fromChannel(2, 1, 3_000, 0);
    assert.equal(t.watermark, 7_000, 'never backwards');
  });

  it('holds the minimum policy at the input not heard from', () => {
    const t = tracker('min');
    t.fromChannel(0, 0, 5_000, 0);
    t.fromChannel(1, 0, 5_000, 0);
    assert.equal(t.watermark, Number.NEGATIVE_INFINITY, 'input 1 is silent');
    t.fromChannel(2, 1, 8_000, 0);
    assert.equal(t.watermark, 5_000);
  });
});
