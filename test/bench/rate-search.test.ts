import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateSearch } from '../../src/bench/rate-search.js';

/** Runs a search against a system that sustains every rate up to `capacity`. */
function search(capacity: number, start = 100_000): RateSearch {
  const s = new RateSearch(start, { precision: 0.1, floor: 1000, ceiling: 20_000_000, step: 10_000 });
  for (let rate = s.next(), n = 0; rate !== null; rate = s.next(), n++) {
    assert.ok(n < 50, 'the search ends');
    s.record(rate, rate <= capacity);
  }
  return s;
}

describe('the sustainable-rate search', () => {
  it('doubles until a rate fails, then bisects to within 10 %', () => {
    const s = search(1_300_000);
    assert.deepEqual(
      s.tried.slice(0, 6).map((t) => t.rate),
      [100_000, 200_000, 400_000, 800_000, 1_600_000, 1_200_000],
    );
    assert.ok(s.best <= 1_300_000 && s.best >= 1_300_000 * 0.9, `best ${s.best}`);
    assert.ok(s.worst > 1_300_000 && s.worst - s.best <= s.worst * 0.1);
  });

  it('halves when even the start rate is not sustainable', () => {
    const s = search(30_000);
    assert.deepEqual(
      s.tried.slice(0, 3).map((t) => t.rate),
      [100_000, 50_000, 30_000],
    );
    assert.equal(s.best, 30_000);
  });

  it('stops at the ceiling', () => {
    const s = new RateSearch(100_000, { precision: 0.1, floor: 1000, ceiling: 400_000, step: 10_000 });
    for (let rate = s.next(); rate !== null; rate = s.next()) s.record(rate, true);
    assert.equal(s.best, 400_000);
  });
});
