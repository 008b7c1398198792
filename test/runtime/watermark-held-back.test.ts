import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CheckpointManager } from '../../src/checkpoint/manager.js';
import { progressStatus } from '../../src/cli/format.js';
import type { StreamingQueryProgress } from '../../src/index.js';
import { EpochCoordinator } from '../../src/runtime/driver/epoch-coordinator.js';
import { watermarkHeldBack } from '../../src/runtime/driver/watermark-held-back.js';

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

  it("go into the epoch's commit, one partition per source that had one holding it back", async () => {
    const commits: unknown[][] = [];
    const checkpoint = {
      logBytesWritten: 0,
      writeOffsets: async () => 0,
      writeCommit: async (...args: unknown[]) => {
        commits.push(args);
        return 0;
      },
      purge: async () => {},
    } as unknown as CheckpointManager;
    const coordinator = new EpochCoordinator(
      {
        sourcePartitions: [3, 1],
        statefulPartitions: 0,
        stateDurable: false,
        watermarkInputs: 0,
        checkpoint,
        offsetsAtCommit: true,
        progressLogIntervalMs: null,
        committedEpoch: -1,
        retention: 10,
        sinkCommitter: null,
      },
      { committed: () => {}, failed: (e) => assert.fail(String(e)), now: () => 0 },
    );
    coordinator.acked(0);
    for (const [source, partition, value, behind] of [
      [0, 0, 21_000, false],
      [0, 1, 4_000, true],
      [0, 2, 9_000, true],
      [1, 0, 2_000, true],
    ] as const) {
      coordinator.sourceOffset(0, source, partition, 10);
      coordinator.sourceWatermark(0, source, partition, value, behind);
    }
    coordinator.check();
    await coordinator.flushed();
    assert.equal(commits.length, 1);
    assert.deepEqual(commits[0]![3], [
      { partition: 1, partitionsBehind: 2, heldBackMs: 17_000 },
      null, // its only partition: nothing ahead of it to hold back
    ]);
  });
});
