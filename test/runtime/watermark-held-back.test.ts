import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { progressStatus } from '../../src/cli/format.js';
import type { StreamingQueryProgress } from '../../src/index.js';
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

  it("show in millrace run's status line", () => {
    const latency = { p50: 0.2, p99: 3 };
    const progress = (metrics?: Record<string, number>) =>
      ({
        batchId: 4,
        inputRowsPerSecond: 20,
        sink: { numOutputRows: 6 },
        latencyMs: { e2e: latency },
        sources: [{ description: 'Generator[payments]', ...(metrics === undefined ? {} : { metrics }) }],
      }) as unknown as StreamingQueryProgress;
    assert.match(
      progressStatus(
        progress({ partitionsBehind: 1, watermarkHeldByPartition: 1, watermarkHeldBackMs: 17_250 }),
      ),
      / · watermark held 17\.25 s back by Generator\[payments\] partition 1$/,
    );
    assert.doesNotMatch(progressStatus(progress()), /watermark held/);
  });
});
