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

  describe('from the tasks that run the watermark operator, one source partition per channel', () => {
    /** One input kept time by; channels 0 and 1 come from its watermark operator's two partitions. */
    const partitions = (idleTimeout?: number, perBatch = false) => {
      const t = new WatermarkTracker(1, [0], 'min', perBatch, [idleTimeout], [[]], 2, 0, [[0, 1]]);
      t.start(0);
      return t;
    };

    it('holds the watermark at a partition not heard from yet', () => {
      const t = partitions();
      assert.equal(t.fromChannel(0, 0, 20_000, 1, false), false);
      assert.equal(t.watermark, Number.NEGATIVE_INFINITY);
    });

    it('holds it at the value of a partition that is behind, however far another has read', () => {
      const t = partitions();
      t.fromChannel(0, 0, 20_000, 1, false);
      assert.equal(t.fromChannel(1, 0, 5_000, 2, true), true);
      assert.equal(t.watermark, 5_000);
      t.fromChannel(1, 0, 9_000, 3, true);
      assert.equal(t.watermark, 9_000);
      assert.equal(t.fromChannel(1, 0, 12_000, 4, false), true, 'caught up: the largest value counts');
      assert.equal(t.watermark, 20_000);
    });

    it('takes the largest value once every partition has caught up, one without rows included', () => {
      const t = partitions();
      t.fromChannel(0, 0, Number.NEGATIVE_INFINITY, 1, false);
      t.fromChannel(1, 0, 7_000, 2, false);
      assert.equal(t.watermark, 7_000, 'an empty partition that read everything holds nothing back');
    });

    it('lets a lagging partition whose value has not moved for the idle timeout go, until it moves', () => {
      const t = partitions(1_000);
      t.fromChannel(0, 0, 20_000, 2, false);
      t.fromChannel(1, 0, 5_000, 2, true);
      assert.equal(t.watermark, 5_000);
      assert.equal(t.nextDeadline, 1_002);
      assert.equal(t.tick(1_001), false);
      assert.equal(t.tick(1_002), true);
      assert.equal(t.watermark, 20_000);
    });

    it('lets an ended partition go', () => {
      const t = partitions();
      t.fromChannel(0, 0, 20_000, 1, false);
      t.fromChannel(1, 0, 5_000, 1, true);
      assert.equal(t.channelEnded(1, 2), true);
      assert.equal(t.watermark, 20_000);
    });

    it('combines them by the largest in micro-batch mode, where a batch reads a backlog under the last watermark', () => {
      const t = partitions(undefined, true);
      t.fromChannel(0, 0, 20_000, 1, false);
      t.fromChannel(1, 0, 5_000, 1, true);
      assert.equal(t.commitBatch(2), 20_000);
    });
  });
});
