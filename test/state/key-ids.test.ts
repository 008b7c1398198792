import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { KeyIds } from '../../src/state/key-ids.js';

/** A new string with the same text (not the same object), as a row decoded from a frame brings. */
const fresh = (s: string): string => s.split('').join('');

describe('interned keys', () => {
  it('find each key by its value, whatever string object brings it', () => {
    const ids = new KeyIds();
    const keys = ['card-1', 'card-12345', 'a'.repeat(20), 'b'.repeat(21), 'zürich', 'カード-7', ''];
    for (const [id, k] of keys.entries()) ids.set(k, id);
    keys.forEach((k, id) => {
      assert.equal(ids.find(fresh(k)), id, `key ${JSON.stringify(k)}`);
      assert.equal(ids.value(id), k);
    });
    assert.equal(ids.find('card-2'), -1);
    assert.equal(ids.find('card-1234'), -1, 'a prefix of a key is another key');
    assert.equal(ids.find('a'.repeat(19)), -1);
    assert.equal(ids.find('カード-8'), -1);
    assert.equal(ids.span, keys.length);
  });

  it('keep strings, numbers, booleans, null and objects apart', () => {
    const ids = new KeyIds();
    const keys: unknown[] = ['1', 1, true, 'true', null, { card: 1 }, [1]];
    for (const [id, k] of keys.entries()) ids.set(k, id);
    for (const [id, k] of keys.entries()) assert.equal(ids.find(k), id);
    assert.equal(ids.find(undefined), ids.find(null), 'undefined is the key null');
    assert.equal(ids.find({ card: 1 }), 5, 'objects by their JSON');
    assert.equal(ids.find(2), -1);
  });

  it('agree with a Map through any sequence of adds and deletes', () => {
    // Short alphabets and lengths make hash neighbours and long probe runs, so deletions have
    // entries to shift back.
    const key = fc.oneof(
      fc.string({ unit: fc.constantFrom('a', 'b', 'é'), maxLength: 24 }),
      fc.integer({ min: 0, max: 50 }),
    );
    const op = fc.record({ add: fc.boolean(), key });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const ids = new KeyIds();
        const model = new Map<unknown, number>();
        const free: number[] = [];
        for (const { add, key } of ops) {
          const known = model.get(key);
          if (add && known === undefined) {
            const id = free.pop() ?? ids.span;
            ids.set(key, id);
            model.set(key, id);
          } else if (!add && known !== undefined) {
            ids.delete(known);
            model.delete(key);
            free.push(known);
          }
          for (const [k, id] of model) assert.equal(ids.find(typeof k === 'string' ? fresh(k) : k), id);
          if (!model.has(key)) assert.equal(ids.find(key), -1);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('grow past many keys and still find every one', () => {
    const ids = new KeyIds();
    for (let i = 0; i < 20_000; i++) ids.set(`card-${i}`, i);
    for (let i = 0; i < 20_000; i++) assert.equal(ids.find(`card-${i}`), i);
    for (let i = 0; i < 20_000; i += 2) ids.delete(i);
    for (let i = 0; i < 20_000; i++) assert.equal(ids.find(`card-${i}`), i % 2 === 0 ? -1 : i);
  });
});
