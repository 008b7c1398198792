import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { InMemoryStateStore } from '../../src/state/state-store.js';

/** A value the operator updates in place, as an aggregation's group is. */
interface Counter {
  n: number;
}

/** Copies on encode, as the aggregation's codec does, so later in-place updates cannot leak in. */
const codec = { encode: (v: Counter) => ({ n: v.n }), decode: (d: unknown) => ({ ...(d as Counter) }) };

function storeWith(entries: Record<string, number>): InMemoryStateStore<Counter> {
  const store = new InMemoryStateStore<Counter>(8, codec);
  for (const [k, n] of Object.entries(entries)) store.put(k, { n });
  store.trackChanges();
  return store;
}

/** The encoded entries drained from the store, as [key, encoded value] pairs in order. */
function drain(store: InMemoryStateStore<Counter>): [string, unknown][] {
  const chunk = store.drainEncoded();
  if (chunk === null) return [];
  const values = chunk.values as unknown[];
  return chunk.keys.map((k, i) => [k, values[i]]);
}

/** What a restore from the encoded entries holds: each entry set in order, the last one winning. */
function replay(entries: [string, unknown][]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of entries) out[k] = (v as Counter).n;
  return out;
}

/** The operator's update of a key: read it, change it in place, mark it written. */
function increment(store: InMemoryStateStore<Counter>, key: string): void {
  const v = store.get(key) ?? { n: 0 };
  v.n++;
  store.put(key, v);
}

describe('InMemoryStateStore checkpoints', () => {
  it('a snapshot holds every key with its value at the epoch end, whatever the operator does meanwhile', () => {
    const store = storeWith({ a: 1, b: 2, c: 3, d: 4 });
    assert.deepEqual(store.beginCheckpoint(true), []);
    assert.equal(store.encodeSome(1), false); // the walk encoded `a`
    increment(store, 'a'); // after its turn: encoded again, with the same value
    increment(store, 'c'); // before its turn: encoded now, with its value at the epoch end
    increment(store, 'c');
    store.remove('b'); // before its turn: encoded now
    increment(store, 'e'); // created after the epoch end: not in the snapshot
    store.remove('d');
    store.put('d', { n: 40 }); // removed and created again: the epoch end's value only
    assert.equal(store.encodeSome(Number.POSITIVE_INFINITY), true);
    assert.equal(store.checkpointing, false);
    assert.deepEqual(replay(drain(store)), { a: 1, b: 2, c: 3, d: 4 });
    // The live state went on.
    assert.deepEqual(Object.fromEntries([...store.entries()].map(([k, v]) => [k, v.n])), {
      a: 2,
      c: 5,
      e: 1,
      d: 40,
    });
  });

  it('a changelog after a snapshot holds the keys written since, and the keys removed', () => {
    const store = storeWith({ a: 1, b: 2 });
    store.beginCheckpoint(true);
    increment(store, 'a');
    store.remove('b');
    increment(store, 'c');
    store.encodeSome(Number.POSITIVE_INFINITY);
    drain(store);
    assert.deepEqual(store.beginCheckpoint(false), ['b']);
    increment(store, 'c'); // after the epoch end: the changelog keeps c = 1
    store.encodeSome(Number.POSITIVE_INFINITY);
    assert.deepEqual(replay(drain(store)), { a: 2, c: 1 });
  });

  it('a snapshot restores the state of its epoch end under any interleaving of updates and slices', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('increment' as const), key: fc.integer({ min: 0, max: 11 }) }),
      fc.record({ kind: fc.constant('remove' as const), key: fc.integer({ min: 0, max: 11 }) }),
      fc.record({ kind: fc.constant('slice' as const), budget: fc.integer({ min: 1, max: 4 }) }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.integer({ min: 0, max: 11 }).map(String), fc.integer({ min: 1, max: 9 })),
        fc.array(op, { maxLength: 60 }),
        (initial, ops) => {
          const store = storeWith(initial);
          store.beginCheckpoint(true);
          const encoded: [string, unknown][] = [];
          for (const o of ops) {
            if (o.kind === 'increment') increment(store, String(o.key));
            else if (o.kind === 'remove') store.remove(String(o.key));
            else if (store.checkpointing) store.encodeSome(o.budget);
            encoded.push(...drain(store));
          }
          store.encodeSome(Number.POSITIVE_INFINITY);
          encoded.push(...drain(store));
          assert.deepEqual(replay(encoded), { ...initial });
        },
      ),
    );
  });
});
