import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TimeIndex } from '../../src/state/time-index.js';

const due = (index: TimeIndex, upTo: number) => {
  const out: string[] = [];
  index.closeUpTo(upTo, (key, time) => out.push(`${key}@${time}`));
  return out;
};

describe('the time index', () => {
  it('hands entries due at or before a time over in time order, once', () => {
    const index = new TimeIndex();
    index.add(30, 'c');
    index.add(10, 'a');
    index.add(20, 'b');
    index.add(10, 'a2');
    assert.equal(index.first(), 10);
    assert.deepEqual(due(index, 20), ['a@10', 'a2@10', 'b@20']);
    assert.deepEqual(due(index, 20), []);
    assert.equal(index.first(), 30);
  });

  it('forgets a removed entry and keeps the others of its time', () => {
    const index = new TimeIndex();
    index.add(10, 'a');
    index.add(10, 'b');
    index.remove(10, 'a');
    index.remove(99, 'a'); // nothing there: no effect
    assert.deepEqual(due(index, 10), ['b@10']);
  });

  it('hands over the key lists of the times due, in time order, once', () => {
    const index = new TimeIndex();
    index.add(20, 'b');
    index.add(10, 'a');
    index.add(10, 'a2');
    index.add(30, 'c');
    const lists: string[] = [];
    index.takeUpTo(20, (keys, time) => lists.push(`${keys.join(',')}@${time}`));
    assert.deepEqual(lists, ['a,a2@10', 'b@20']);
    assert.equal(index.first(), 30);
    assert.deepEqual(due(index, 20), []);
    assert.deepEqual(due(index, 30), ['c@30']);
  });

  it('sorts a restore given in any order', () => {
    const index = new TimeIndex();
    index.addAll([5, 1, 3, 1], ['x', 'y', 'z', 'y2']);
    assert.deepEqual(due(index, Number.POSITIVE_INFINITY), ['y@1', 'y2@1', 'z@3', 'x@5']);
  });
});
