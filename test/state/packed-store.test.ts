import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type PackedForm, PackedStore } from '../../src/state/packed-store.js';
import type { StateFreeze } from '../../src/state/state-freeze.js';

interface Note {
  text: string;
  n: number;
}

/** Notes are plain data: packed and checkpointed as they are. */
const form: PackedForm<Note> = {
  pack: (v) => v,
  unpack: (d) => d as Note,
  toCheckpoint: (d) => d,
  fromCheckpoint: (d) => d,
};

function storeWith(entries: Record<string, number>): PackedStore<Note> {
  const store = new PackedStore(form);
  for (const [k, n] of Object.entries(entries)) store.put(k, { text: 'x'.repeat(n), n });
  store.store.trackChanges();
  return store;
}

/** The operator's update of a key: read it, change the copy, put it back (the text grows, moving it). */
function grow(store: PackedStore<Note>, key: string, by: number): void {
  const v = store.get(key) ?? { text: '', n: 0 };
  v.n += by;
  v.text = 'x'.repeat(v.n * 7);
  store.put(key, v);
}

function drain(freeze: StateFreeze<number>): [string, Note][] {
  return freeze.drain(true).flatMap((chunk) => {
    const values = chunk.values as Note[];
    return chunk.keys!.map((k, i): [string, Note] => [k, values[i]!]);
  });
}

const counts = (entries: Iterable<[string, Note]>): Record<string, number> =>
  Object.fromEntries([...entries].map(([k, v]) => [k, v.n]));

describe('PackedStore', () => {
  it('hands out copies: a value changed in place is kept only once it is put', () => {
    const store = storeWith({ a: 1 });
    const copy = store.get('a')!;
    copy.n = 99;
    assert.equal(store.get('a')!.n, 1);
    store.put('a', copy);
    assert.deepEqual(store.get('a'), { text: 'x', n: 99 });
    store.remove('a');
    assert.equal(store.get('a'), undefined);
    assert.equal(store.size, 0);
  });

  it('reads back values of many shapes, beyond the key lists it keeps for good, after others were packed', () => {
    const plain: PackedForm<unknown> = form as PackedForm<unknown>;
    // Objects with arbitrary keys: far more distinct key lists than the store keeps (32). Without
    // `__proto__` keys, which read back renamed (see the next test).
    const value = fc
      .jsonValue({ maxDepth: 3 })
      .map((v) => JSON.parse(JSON.stringify(v), (k, x) => (k === '__proto__' ? undefined : x)) as unknown);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), value), { minLength: 1, maxLength: 120 }),
        (writes) => {
          const store = new PackedStore(plain);
          const expected = new Map<string, unknown>();
          for (const [k, v] of writes) {
            store.put(String(k), v);
            expected.set(String(k), v);
          }
          for (const [k, v] of expected) assert.deepEqual(store.get(k), v);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reads an own __proto__ key back renamed __proto_, never as the prototype', () => {
    const store = new PackedStore(form as PackedForm<unknown>);
    store.put('k', JSON.parse('{"__proto__":{"polluted":true},"a":1}'));
    const back = store.get('k') as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(back), Object.prototype);
    assert.deepEqual(Object.keys(back), ['__proto_', 'a']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('counts the memory of its packed values', () => {
    const store = storeWith({});
    const empty = store.metrics().memoryUsedBytes;
    store.put('k', { text: 'y'.repeat(1_000), n: 1 });
    const held = store.metrics().memoryUsedBytes;
    assert.ok(held >= empty + 1_000, `${held} bytes after a 1 000-character value`);
    store.remove('k');
    assert.equal(store.metrics().memoryUsedBytes, empty);
  });

  it('checkpoints the epoch end while values are read and rewritten, written blind, moved to other slots, removed and their slots reused', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('grow' as const), key: fc.integer({ min: 0, max: 9 }), by: fc.nat(40) }),
      fc.record({ kind: fc.constant('set' as const), key: fc.integer({ min: 0, max: 9 }), n: fc.nat(60) }),
      fc.record({ kind: fc.constant('remove' as const), key: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant('slice' as const), budget: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant('epoch' as const) }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.integer({ min: 0, max: 9 }).map(String), fc.integer({ min: 1, max: 60 })),
        fc.array(op, { maxLength: 60 }),
        (initial, ops) => {
          const store = storeWith(initial);
          // A snapshot, then changelogs, each holding its own epoch end while the next runs.
          const checkpoints = [
            { freeze: store.store.beginCheckpoint(true), expected: counts(store.entries()) },
          ];
          const encoded = new Map(checkpoints.map((c) => [c.freeze, [] as [string, Note][]]));
          const slice = (budget: number) => {
            for (const { freeze } of checkpoints) {
              freeze.encodeSome(budget);
              encoded.get(freeze)!.push(...drain(freeze));
            }
          };
          for (const o of ops) {
            if (o.kind === 'grow') grow(store, String(o.key), o.by);
            else if (o.kind === 'set') store.put(String(o.key), { text: 'z'.repeat(o.n * 3), n: o.n });
            else if (o.kind === 'remove') store.remove(String(o.key));
            else if (o.kind === 'slice') slice(o.budget);
            else {
              const freeze = store.store.beginCheckpoint(false);
              checkpoints.push({ freeze, expected: counts(store.entries()) });
              encoded.set(freeze, []);
            }
            slice(0);
          }
          slice(Number.POSITIVE_INFINITY);
          // Replaying the snapshot, then each changelog, gives each epoch end.
          const state: Record<string, number> = {};
          for (const { freeze, expected } of checkpoints) {
            for (const keys of freeze.removed) for (const k of keys) delete state[k];
            for (const [k, v] of encoded.get(freeze)!) state[k] = v.n;
            assert.deepEqual(state, expected);
          }
        },
      ),
    );
  });

  it('restores what a checkpoint holds into a new store', () => {
    const store = storeWith({ a: 3, b: 500 });
    const snapshot = store.store.beginCheckpoint(true);
    snapshot.encodeSome(Number.POSITIVE_INFINITY);
    const entries = drain(snapshot);
    const restored = new PackedStore(form);
    restored.store.loadChunk(
      entries.map(([k]) => k),
      entries.map(([, v]) => v),
      true,
    );
    assert.deepEqual(Object.fromEntries(restored.entries()), Object.fromEntries(store.entries()));
  });
});
