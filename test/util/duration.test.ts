import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration } from '../../src/index.js';

describe('durations', () => {
  it('reads numbers as milliseconds and strings with units, singular or plural', () => {
    assert.equal(parseDuration(250), 250);
    assert.equal(parseDuration('300 milliseconds'), 300);
    assert.equal(parseDuration('10 seconds'), 10_000);
    assert.equal(parseDuration('1 second'), 1000);
    assert.equal(parseDuration('15 minutes'), 900_000);
    assert.equal(parseDuration('1 hour'), 3_600_000);
    assert.equal(parseDuration('2h'), 7_200_000);
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('5 min'), 300_000);
    assert.equal(parseDuration('1 hour 30 minutes'), 5_400_000);
    assert.equal(parseDuration('1.5 s'), 1500);
  });

  it('refuses what it cannot read with INVALID_DURATION', () => {
    for (const bad of ['', 'soon', '10', '10 fortnights', '-5 s', 'x 10s', '10s x']) {
      assert.throws(() => parseDuration(bad), { code: 'INVALID_DURATION' }, bad);
    }
    assert.throws(() => parseDuration(-1), { code: 'INVALID_DURATION' });
    assert.throws(() => parseDuration(Number.NaN), { code: 'INVALID_DURATION' });
  });

  it('says that a number written as text needs a unit, and offers it with one', () => {
    assert.throws(() => parseDuration('500', 'interval'), {
      code: 'INVALID_DURATION',
      message: "interval: '500' has no unit: write it with one, e.g. 500ms, 30s or 5min",
    });
    assert.throws(() => parseDuration('soon', 'interval'), {
      code: 'INVALID_DURATION',
      message:
        /^interval: cannot read 'soon' as a duration: write a number and a unit, e\.g\. 500ms, 30s, 5min/,
    });
  });
});
