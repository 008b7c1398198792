import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { keyHasher, stableHash } from '../../src/plan/partitioner.js';

describe('stable key hashing', () => {
  it('gives fixed values, so partitioning is the same in every thread, run and version', () => {
    // Changing these changes where existing checkpointed state lives: do not, without a migration.
    assert.equal(stableHash('card-42'), 1699138436);
    assert.equal(stableHash(42), 1732903491);
    assert.equal(stableHash(null), stableHash(undefined));
    assert.equal(stableHash(1), stableHash(1.0));
  });

  it('hashes composite keys like the array of their values', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer(), (a, b) => {
        assert.equal(keyHasher(['a', 'b'])({ a, b }), stableHash([a, b]));
      }),
    );
  });

  it('spreads keys evenly enough over partitions', () => {
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 80_000; i++) counts[stableHash(`card-${i}`) % 8]++;
    for (const c of counts) assert.ok(c > 9000 && c < 11000, `partition got ${c} of 80 000`);
  });
});
