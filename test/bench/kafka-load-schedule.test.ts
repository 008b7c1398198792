import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { dueRows, scheduledAt } from '../../src/bench/kafka-load-schedule.js';

describe("the Kafka load generator's schedule", () => {
  it('puts each row on the first whole millisecond at or after its even spacing', () => {
    // 10 k rows/s: ten rows a millisecond, the first ten due 1 ms after the start.
    const at = Array.from({ length: 21 }, (_, i) => scheduledAt(1000, 10_000, i) - 1000);
    assert.deepEqual(at, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3]);
    // 300 rows/s: 3.33 ms apart, each on the next whole millisecond.
    assert.deepEqual(
      [0, 1, 2, 3].map((i) => scheduledAt(0, 300, i)),
      [4, 7, 10, 14],
    );
  });

  it('counts as due exactly the rows scheduled at or before now, at any rate', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 41 }),
        fc.integer({ min: 1, max: 2_000_000 }),
        fc.integer({ min: 0, max: 50_000_000 }),
        (start, rate, i) => {
          const at = scheduledAt(start, rate, i);
          assert.ok(Number.isInteger(at));
          // Never before its even spacing, and less than a millisecond after it.
          assert.ok((at - start) * rate >= (i + 1) * 1000);
          assert.ok((at - 1 - start) * rate < (i + 1) * 1000);
          assert.ok(dueRows(start, rate, at) >= i + 1, 'due at its time');
          assert.ok(dueRows(start, rate, at - 1) <= i, 'not due a millisecond earlier');
        },
      ),
      { numRuns: 2000 },
    );
  });
});
