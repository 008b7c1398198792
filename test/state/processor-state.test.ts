import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pack, unpack } from 'msgpackr';
import {
  type KeyEntry,
  keyEntryForm,
  migrateLegacyEntries,
  NO_TIMERS,
  StateScope,
} from '../../src/operators/processor-state.js';
import { ListStateImpl, MapStateImpl, ValueStateImpl } from '../../src/operators/state-variables.js';
import { PackedStore } from '../../src/state/packed-store.js';
import { TimeIndex } from '../../src/state/time-index.js';

const NAMES = ['recent', 'last', 'tags'];

/** What a checkpoint holds for an entry. */
const checkpointed = (x: KeyEntry): unknown => keyEntryForm.toCheckpoint(unpack(pack(keyEntryForm.pack(x))));

/** What a restore of a checkpoint written before one entry per key loads: its entries, decoded. */
function legacyStore(): PackedStore<KeyEntry> {
  const store = new PackedStore(keyEntryForm);
  store.store.loadChunk(
    ['recent\u0000scard-1', 'last\u0000scard-1', '#timers\u0000scard-1', 'tags\u0000scard-2'],
    [
      { l: [1, 2], e: [5_000, 9_000] },
      { v: { country: 'DE' }, e: 0 },
      { k: 'card-1', t: [700, 900] },
      { m: [['a', 1, 3_000]] },
    ],
    true,
  );
  return store;
}

describe("transformWithState's state", () => {
  it('moves the entries of a checkpoint written before one entry per key into one entry per key', () => {
    const store = legacyStore();
    assert.equal(migrateLegacyEntries(store, NAMES), 4);
    const entries = Object.fromEntries(store.entries());
    assert.deepEqual(Object.keys(entries).sort(), ['scard-1', 'scard-2']);
    assert.deepEqual(entries['scard-1'], {
      k: 'card-1',
      s: [{ l: [1, 2], e: [5_000, 9_000] }, { v: { country: 'DE' }, e: 0 }, null],
      t: [700, 900],
      w: -1,
    });
    const card2 = entries['scard-2']!;
    assert.equal(card2.k, undefined, 'the key value is learnt when a row of the key comes');
    assert.deepEqual(card2.s.slice(0, 2), [null, null]);
    assert.deepEqual([...(card2.s[2] as { m: Map<string, unknown> }).m.values()], [['a', 1, 3_000]]);
    assert.equal(card2.t, NO_TIMERS);
  });

  it('after a restore counts a row per variable holding a value and per key with timers, and sweeps each key at its earliest expiry', () => {
    const store = legacyStore();
    migrateLegacyEntries(store, NAMES);
    const expiries = new TimeIndex();
    const scope = new StateScope(store, expiries, NAMES.length);
    const timers = scope.restored();
    assert.equal(scope.rows, 4);
    assert.deepEqual(timers, { times: [700, 900], texts: ['scard-1', 'scard-1'] });
    const sweeps: [string, number][] = [];
    expiries.closeUpTo(Number.POSITIVE_INFINITY, (text, time) => sweeps.push([text, time]));
    assert.deepEqual(sweeps.sort(), [
      ['scard-1', 5_000],
      ['scard-2', 3_000],
    ]);
  });

  it('sweeps a restored key at its earliest expiry, even after a row wrote it again', () => {
    const store = new PackedStore(keyEntryForm);
    store.store.loadChunk(
      ['scard-1'],
      [
        {
          k: 'card-1',
          s: [
            { v: 'DE', e: 5_000 },
            { v: 'x', e: 9_000 },
          ],
          t: [],
        },
      ],
      true,
    );
    const expiries = new TimeIndex();
    const scope = new StateScope(store, expiries, 2);
    scope.restored();
    const second = new ValueStateImpl<string>(scope, { name: 'second', kind: 'value', ttlMs: 60_000 }, 1);
    scope.begin('card-1', 'scard-1', 1_000);
    second.update('y'); // expires at 61 000: the sweep due at 5 000 still comes
    scope.end();
    const due: [string, number][] = [];
    expiries.closeUpTo(5_000, (text, time) => due.push([text, time]));
    assert.deepEqual(due, [['scard-1', 5_000]]);
    scope.sweep('scard-1', 5_000, 5_000);
    assert.deepEqual(
      store.get('scard-1')!.s,
      [null, { v: 'y', e: 61_000 }],
      'the first value expired and is gone',
    );
    assert.equal(scope.rows, 1);
  });

  it('writes a key back once per handler, keeps only what the handler wrote, and removes a key once it holds nothing', () => {
    const store = new PackedStore(keyEntryForm);
    const scope = new StateScope(store, new TimeIndex(), 1);
    const last = new ValueStateImpl<{ country: string }>(
      scope,
      { name: 'last', kind: 'value', ttlMs: 1_000 },
      0,
    );
    scope.begin('card-1', 'scard-1', 100);
    last.update({ country: 'DE' });
    scope.end();
    assert.deepEqual(checkpointed(store.get('scard-1')!), {
      k: 'card-1',
      s: [{ v: { country: 'DE' }, e: 1_100 }],
      t: [],
    });
    const updates = store.metrics().numRowsUpdated;
    scope.begin('card-1', 'scard-1', 200);
    last.update({ country: 'FR' });
    last.update({ country: 'NL' });
    scope.end();
    assert.equal(store.metrics().numRowsUpdated, updates + 1, 'one write for the handler');
    assert.deepEqual(store.get('scard-1')!.s[0], { v: { country: 'NL' }, e: 1_200 });
    scope.begin('card-1', 'scard-1', 300);
    last.get()!.country = 'PL'; // changed in place, never written back
    scope.end();
    assert.equal(store.metrics().numRowsUpdated, updates + 1, 'a read writes nothing');
    assert.deepEqual(store.get('scard-1')!.s[0], { v: { country: 'NL' }, e: 1_200 });
    scope.begin('card-1', 'scard-1', 2_000);
    assert.equal(last.get(), undefined, 'expired');
    scope.end();
    assert.equal(store.get('scard-1'), undefined);
    assert.equal(scope.rows, 0);
  });

  it('checkpoints an entry as plain data, without the time of its sweep, and reads it back the same', () => {
    const entry: KeyEntry = {
      k: 'card-9',
      s: [
        { v: { country: 'SE', at: new Date(5) }, e: 7 },
        { l: [1, 2], e: [3, 4] },
        { m: new Map([['sa', ['a', 1, 0]]]) },
      ],
      t: [10, 20],
      w: 3,
    };
    const bytes = pack(keyEntryForm.pack(entry));
    assert.deepEqual(
      keyEntryForm.unpack(unpack(bytes)),
      entry,
      'kept packed, the time of its sweep included',
    );
    const kept = unpack(bytes);
    const written = keyEntryForm.toCheckpoint(kept);
    assert.deepEqual(written, {
      k: 'card-9',
      s: [{ v: { country: 'SE', at: new Date(5) }, e: 7 }, { l: [1, 2], e: [3, 4] }, { m: [['a', 1, 0]] }],
      t: [10, 20],
    });
    const restored = unpack(pack(keyEntryForm.fromCheckpoint(unpack(pack(written)))));
    assert.deepEqual(
      keyEntryForm.unpack(restored),
      { ...entry, w: -1 },
      'restored: its sweep at its earliest expiry',
    );
  });

  it('refuses a null or undefined value, or a list that is no array, with INVALID_ARGUMENT naming the variable', () => {
    const scope = new StateScope(new PackedStore(keyEntryForm), new TimeIndex(), 3);
    const last = new ValueStateImpl<unknown>(scope, { name: 'last', kind: 'value', ttlMs: null }, 0);
    const recent = new ListStateImpl<unknown>(scope, { name: 'recent', kind: 'list', ttlMs: null }, 1);
    const tags = new MapStateImpl<string, unknown>(scope, { name: 'tags', kind: 'map', ttlMs: null }, 2);
    scope.begin('card-1', 'scard-1', 0);
    const refused = (fn: () => void, message: RegExp) =>
      assert.throws(fn, { name: 'MillraceError', code: 'INVALID_ARGUMENT', message });
    refused(
      () => last.update(null),
      /valueState 'last'.update\(\): the value must not be null; use clear\(\)/,
    );
    refused(() => recent.put(7 as never), /listState 'recent'.put\(\): pass an array/);
    refused(
      () => recent.appendList([1, undefined]),
      /listState 'recent'.appendList\(\): values must not be null/,
    );
    refused(
      () => tags.updateValue('a', undefined),
      /mapState 'tags'.updateValue\(\): the value must not be undefined/,
    );
    scope.end();
  });
});
