import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { StateFreeze } from '../../src/state/state-freeze.js';
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
function drain(freeze: StateFreeze<Counter>): [string, unknown][] {
  return freeze.drain(true).flatMap((chunk) => {
    const values = chunk.values as unknown[];
    return chunk.keys!.map((k, i): [string, unknown] => [k, values[i]]);
  });
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
    const snapshot = store.beginCheckpoint(true);
    assert.deepEqual(snapshot.removed, []);
    assert.equal(snapshot.encodeSome(1), false); // the walk encoded `a`
    increment(store, 'a'); // after its turn: encoded again, with the same value
    increment(store, 'c'); // before its turn: encoded now, with its value at the epoch end
    increment(store, 'c');
    store.remove('b'); // before its turn: encoded now
    increment(store, 'e'); // created after the epoch end: not in the snapshot
    store.remove('d');
    store.put('d', { n: 40 }); // removed and created again: the epoch end's value only
    assert.equal(snapshot.encodeSome(Number.POSITIVE_INFINITY), true);
    assert.equal(store.checkpointing, 0);
    assert.deepEqual(replay(drain(snapshot)), { a: 1, b: 2, c: 3, d: 4 });
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
    const snapshot = store.beginCheckpoint(true);
    increment(store, 'a');
    store.remove('b');
    increment(store, 'c');
    snapshot.encodeSome(Number.POSITIVE_INFINITY);
    drain(snapshot);
    const changelog = store.beginCheckpoint(false);
    assert.deepEqual(changelog.removed.flat(), ['b']);
    increment(store, 'c'); // after the epoch end: the changelog keeps c = 1
    changelog.encodeSome(Number.POSITIVE_INFINITY);
    assert.deepEqual(replay(drain(changelog)), { a: 2, c: 1 });
  });

  it('a changelog frozen while the snapshot before it is still encoded: each holds its own epoch end', () => {
    const store = storeWith({ a: 1, b: 2, c: 3 });
    const snapshot = store.beginCheckpoint(true);
    assert.equal(snapshot.encodeSome(1), false); // `a`
    increment(store, 'b'); // the snapshot keeps b = 2
    store.remove('c'); // the snapshot keeps c = 3
    increment(store, 'd');
    const changelog = store.beginCheckpoint(false); // the next epoch ended: b = 3, d = 1, c removed
    assert.equal(store.checkpointing, 2);
    increment(store, 'b'); // the changelog keeps b = 3
    increment(store, 'a'); // the snapshot encoded a = 1 already; the changelog does not hold a
    assert.equal(changelog.encodeSome(Number.POSITIVE_INFINITY), true);
    assert.equal(snapshot.encodeSome(Number.POSITIVE_INFINITY), true);
    assert.equal(store.checkpointing, 0);
    assert.deepEqual(replay(drain(snapshot)), { a: 1, b: 2, c: 3 });
    assert.deepEqual(replay(drain(changelog)), { b: 3, d: 1 });
    assert.deepEqual(changelog.removed.flat(), ['c']);
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
          const snapshot = store.beginCheckpoint(true);
          const encoded: [string, unknown][] = [];
          for (const o of ops) {
            if (o.kind === 'increment') increment(store, String(o.key));
            else if (o.kind === 'remove') store.remove(String(o.key));
            else snapshot.encodeSome(o.budget);
            encoded.push(...drain(snapshot));
          }
          snapshot.encodeSome(Number.POSITIVE_INFINITY);
          encoded.push(...drain(snapshot));
          assert.deepEqual(replay(encoded), { ...initial });
        },
      ),
    );
  });

  it('checkpoints of consecutive epochs encoded at once replay to each epoch end, under any interleaving', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('increment' as const), key: fc.integer({ min: 0, max: 11 }) }),
      fc.record({ kind: fc.constant('remove' as const), key: fc.integer({ min: 0, max: 11 }) }),
      fc.record({
        kind: fc.constant('slice' as const),
        budget: fc.integer({ min: 1, max: 4 }),
        which: fc.nat(),
      }),
      fc.record({ kind: fc.constant('epochEnd' as const), full: fc.boolean() }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.integer({ min: 0, max: 11 }).map(String), fc.integer({ min: 1, max: 9 })),
        fc.array(op, { maxLength: 80 }),
        (initial, ops) => {
          const store = storeWith(initial);
          const live = (): Record<string, number> =>
            Object.fromEntries([...store.entries()].map(([k, v]) => [k, v.n]));
          // Each checkpoint with what it encoded and the state at its epoch end.
          const checkpoints: {
            freeze: StateFreeze<Counter>;
            full: boolean;
            encoded: [string, unknown][];
            expected: Record<string, number>;
          }[] = [];
          const begin = (full: boolean) =>
            checkpoints.push({ freeze: store.beginCheckpoint(full), full, encoded: [], expected: live() });
          begin(true);
          for (const o of ops) {
            if (o.kind === 'increment') increment(store, String(o.key));
            else if (o.kind === 'remove') store.remove(String(o.key));
            else if (o.kind === 'slice')
              checkpoints[o.which % checkpoints.length]!.freeze.encodeSome(o.budget);
            else begin(o.full);
            for (const c of checkpoints) c.encoded.push(...drain(c.freeze));
          }
          for (const c of checkpoints) {
            c.freeze.encodeSome(Number.POSITIVE_INFINITY);
            c.encoded.push(...drain(c.freeze));
          }
          assert.equal(store.checkpointing, 0);
          // A restore of each epoch: the newest snapshot at or before it, then the changelogs after.
          let state: Record<string, number> = {};
          for (const c of checkpoints) {
            if (c.full) state = {};
            for (const k of c.freeze.removed.flat()) delete state[k];
            state = { ...state, ...replay(c.encoded) };
            assert.deepEqual(state, c.expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('InMemoryStateStore removals spread over time', () => {
  it('removes queued keys a few at a time, oldest first, counting each removal', () => {
    const store = storeWith({ a: 1, b: 2, c: 3, d: 4 });
    store.removeLater(['a', 'b']);
    store.removeLater(['c']);
    assert.equal(store.removing, true);
    store.removeSome(1); // a
    assert.equal(store.get('a'), undefined);
    assert.deepEqual(store.get('b'), { n: 2 });
    store.removeSome(2); // b, then c from the next list
    assert.equal(store.removing, false);
    assert.deepEqual(store.get('d'), { n: 4 });
    assert.equal(store.metrics().numRowsRemoved, 3);
    assert.equal(store.metrics().numRowsTotal, 1);
  });

  it('shows the store as if every queued key were removed: size, entries, metrics, checkpoints', () => {
    const store = storeWith({ a: 1, b: 2, c: 3 });
    store.removeLater(['a', 'b']);
    assert.equal(store.size, 1);
    assert.equal(store.removing, false);
    store.removeLater(['c']);
    assert.deepEqual([...store.entries()], []);
    store.put('x', { n: 1 });
    store.removeLater(['x']);
    assert.deepEqual(store.metrics(), {
      numRowsTotal: 0,
      numRowsUpdated: 4,
      numRowsRemoved: 4,
      memoryUsedBytes: 0,
    });
    // Queued before the epoch's end: in the changelog's removals.
    store.put('y', { n: 1 });
    store.removeLater(['y']);
    const changelog = store.beginCheckpoint(false);
    assert.deepEqual(changelog.removed.flat().sort(), ['a', 'b', 'c', 'x', 'y']);
  });

  it('a key queued after the epoch end is in the snapshot with its value then', () => {
    const store = storeWith({ a: 1, b: 2 });
    const snapshot = store.beginCheckpoint(true);
    store.removeLater(['b', 'a']);
    store.removeSome(1); // b: encoded at its touch
    assert.equal(snapshot.encodeSome(Number.POSITIVE_INFINITY), true);
    assert.deepEqual(replay(drain(snapshot)), { a: 1, b: 2 });
    store.flushRemovals();
    const changelog = store.beginCheckpoint(false);
    assert.deepEqual(changelog.removed.flat().sort(), ['a', 'b']);
  });
});
