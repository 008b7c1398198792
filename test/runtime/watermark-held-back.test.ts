import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { watermarkHeldBack } from '../../src/runtime/driver/progress-builder.js';

describe("a source's progress metrics", () => {
  it('name the partition that is behind and holds the watermark back, and by how much', () => {
    assert.deepEqual(
      watermarkHeldBack([
        { value: 21_000, behind: false },
        { value: 4_000, behind: true },
        { value: 9_000, behind: true },
      ]),
      { partitionsBehind: 2, watermarkHeldByPartition: 1, watermarkHeldBackMs: 17_000 },
    );
  });

  it('say nothing when every partition keeps up, or the one behind holds nothing back', () => {
    assert.equal(
      watermarkHeldBack([
        { value: 21_000, behind: false },
        { value: 20_000, behind: false },
      ]),
      null,
    );
    assert.equal(
      watermarkHeldBack([
        { value: 21_000, behind: true },
        { value: 20_000, behind: false },
      ]),
      null,
    );
    assert.equal(watermarkHeldBack([null, null]), null, 'no watermark operator in the source tasks');
  });

  it('leave out how far when the partition that holds it back has no row yet', () => {
    assert.deepEqual(
      watermarkHeldBack([
        { value: 21_000, behind: false },
        { value: Number.NEGATIVE_INFINITY, behind: true },
      ]),
      { partitionsBehind: 1, watermarkHeldByPartition: 1 },
    );
  });
});
