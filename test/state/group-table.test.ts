import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { unpack } from 'msgpackr';
import { agg } from '../../src/plan/aggregates.js';
import { compositeKey, GroupTable } from '../../src/state/group-table.js';
import { KEY_GROUPS, keyGroupOf } from '../../src/state/key-groups.js';
import type { StateCheckpoint } from '../../src/state/store-contract.js';
import { tableRows } from '../../src/state/table-staging.js';

/** A count and an average: the average's state is an array the table's owner updates in place. */
const avg = agg.avg('amount').aggregator;

function table(idleSlack?: number): GroupTable {
  return new GroupTable(
    2,
    [(s) => s, (s) => avg.serialize!(s)],
    [(d) => d, (d) => avg.deserialize!(d)],
    idleSlack,
  );
}

/** What the aggregation does with a row of `card` in the window starting at `start`. */
function row(t: GroupTable, card: number, start: number): void {
  const slab = t.slab(start, start + 1000);
  const key = `card-${card}`;
  const slot = t.find(slab, key);
  if (slot < 0) {
    t.add(slab, key, [1, [card, 1]]);
    return;
  }
  t.touch(slab, slot);
  (slab.states[0] as number[])[slot]!++;
  const mean = slab.states[1]![slot] as [number, number];
  mean[0] += card;
  mean[1]++;
}

/** The table's groups by composite key, as JSON (compares whatever the order). */
function content(t: GroupTable): Record<string, string> {
  return Object.fromEntries([...t.entries()].map(([k, g]) => [k, JSON.stringify(g)]));
}

/** The groups a checkpoint encoded so far, by composite key, as the restore decodes them. */
function drained(freeze: StateCheckpoint): [string, string][] {
  return freeze.drain(true).flatMap((chunk) => {
    assert.equal(chunk.keys, null);
    const { keyColumn, starts, ends, stateColumns } = tableRows(
      unpack(chunk.values as Uint8Array),
      chunk.count,
    );
    return keyColumn.map((v, i): [string, string] => {
      const key = compositeKey(starts[i]!, v);
      assert.equal(keyGroupOf(key, KEY_GROUPS), chunk.group, 'a piece holds the entries of its key group');
      return [
        key,
        JSON.stringify({ keys: [v], start: starts[i], end: ends[i], states: stateColumns.map((c) => c[i]) }),
      ];
    });
  });
}

describe('GroupTable', () => {
  it('finds a group by window and key, and drops a window whole when the watermark passes its end', () => {
    const t = table();
    row(t, 1, 0);
    row(t, 1, 0);
    row(t, 2, 0);
    row(t, 1, 1000);
    assert.deepEqual(content(t), {
      's0|card-1': JSON.stringify({ keys: ['card-1'], start: 0, end: 1000, states: [2, [2, 2]] }),
      's0|card-2': JSON.stringify({ keys: ['card-2'], start: 0, end: 1000, states: [1, [2, 1]] }),
      's1000|card-1': JSON.stringify({ keys: ['card-1'], start: 1000, end: 2000, states: [1, [1, 1]] }),
    });
    assert.equal(t.nextEnd, 1000);
    const emitted: string[] = [];
    t.evictUpTo(1000, (slab, slot) => emitted.push(`${slab.start}:${t.keyValue(slab.keyIds[slot]!)}`));
    assert.deepEqual(emitted, ['0:card-1', '0:card-2']);
    assert.deepEqual(Object.keys(content(t)), ['s1000|card-1']);
    assert.equal(t.nextEnd, 2000);
    assert.deepEqual(
      {
        total: t.metrics().numRowsTotal,
        updated: t.metrics().numRowsUpdated,
        removed: t.metrics().numRowsRemoved,
      },
      { total: 1, updated: 4, removed: 2 },
    );
  });

  it('keys of any type are groups of their own, under the keys an InMemoryStateStore gives them', () => {
    const t = table();
    const keys: unknown[] = ['7', 7, null, true, { a: 1 }, [1, 2]];
    for (const key of keys) {
      const slab = t.slab(0, 1000);
      assert.equal(t.find(slab, key), -1);
      t.add(slab, key, [1, [0, 0]]);
    }
    // undefined is null, and an equal object is the same key.
    const slab = t.slab(0, 1000);
    assert.notEqual(t.find(slab, undefined), -1);
    assert.notEqual(t.find(slab, { a: 1 }), -1);
    assert.deepEqual(
      [...t.entries()].map(([k]) => k),
      keys.map((k) => compositeKey(0, k)),
    );
    assert.deepEqual(compositeKey(5, 'x'), 's5|x');
    assert.deepEqual(compositeKey(5, 3), 'n5|3');
    assert.deepEqual(compositeKey(5, null), '[5,null]');
  });

  it('reuses a closed window for the next one, which starts empty, unless a checkpoint still holds it', () => {
    const t = table();
    for (let card = 0; card < 100; card++) row(t, card, 0);
    const first = t.slab(0, 1000);
    t.evictUpTo(1000, null);
    // The closed window's key ids are released a few per row before it can be reused.
    for (let i = 0; i < 2; i++) t.tidy();
    row(t, 7, 1000);
    const second = t.slab(1000, 2000);
    assert.equal(second, first, 'the closed window is the new one');
    assert.equal(second.keyIds.length >= 100, true, 'its arrays kept their size');
    assert.deepEqual(content(t), {
      's1000|card-7': JSON.stringify({ keys: ['card-7'], start: 1000, end: 2000, states: [1, [7, 1]] }),
    });
    // A checkpoint that has not encoded the window yet keeps it: the next window is a new one.
    const freeze = t.beginCheckpoint(true);
    t.evictUpTo(2000, null);
    row(t, 8, 2000);
    assert.notEqual(t.slab(2000, 3000), second);
    freeze.encodeSome(Number.POSITIVE_INFINITY);
    assert.deepEqual(
      drained(freeze).map(([k]) => k),
      ['s1000|card-7'],
      'the checkpoint encodes the window as it was',
    );
  });

  it('forgets keys no window holds once they outnumber the live ones, and reuses their ids', () => {
    const t = table(0);
    for (let w = 0; w < 6; w++) {
      for (let card = 0; card < 50; card++) row(t, w * 100 + card, w * 1000);
      t.evictUpTo(w * 1000, null);
      for (let i = 0; i < 100; i++) t.tidy();
    }
    // Only the last window's keys are live; the ids of the others were purged and reused.
    assert.equal(t.size, 50);
    const slab = t.slab(5000, 6000);
    assert.ok(Math.max(...slab.keyIds.subarray(0, slab.n)) < 150);
    for (let card = 0; card < 50; card++) assert.notEqual(t.find(slab, `card-${500 + card}`), -1);
  });

  it('checkpoints of consecutive epochs, encoded while rows go on, replay to each epoch end', () => {
    const op = fc.oneof(
      { weight: 6, arbitrary: fc.record({ row: fc.record({ card: fc.nat(12), window: fc.nat(3) }) }) },
      { weight: 1, arbitrary: fc.record({ watermark: fc.nat(4) }) },
      { weight: 2, arbitrary: fc.record({ slice: fc.integer({ min: 1, max: 4 }), which: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ epochEnd: fc.boolean() }) },
      { weight: 1, arbitrary: fc.record({ tidy: fc.constant(true) }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 100 }), (ops) => {
        const t = table(0);
        t.trackChanges();
        const checkpoints: {
          freeze: StateCheckpoint;
          full: boolean;
          encoded: [string, string][];
          expected: Record<string, string>;
        }[] = [];
        const begin = (full: boolean) =>
          checkpoints.push({ freeze: t.beginCheckpoint(full), full, encoded: [], expected: content(t) });
        begin(true);
        // Windows only move forward: a row of an evicted window is late, as the operator drops it.
        let watermark = 0;
        for (const o of ops) {
          if ('row' in o) {
            const start = (o.row.window + Math.ceil(watermark / 1000)) * 1000;
            row(t, o.row.card, start);
          } else if ('watermark' in o) {
            watermark = Math.max(watermark, o.watermark * 1000);
            t.evictUpTo(watermark, null);
          } else if ('slice' in o) {
            checkpoints[o.which % checkpoints.length]!.freeze.encodeSome(o.slice);
          } else if ('epochEnd' in o) {
            begin(o.epochEnd);
          } else {
            t.tidy();
          }
          for (const c of checkpoints) c.encoded.push(...drained(c.freeze));
        }
        for (const c of checkpoints) {
          c.freeze.encodeSome(Number.POSITIVE_INFINITY);
          c.encoded.push(...drained(c.freeze));
        }
        // A restore of each epoch: the newest snapshot at or before it, then the changelogs after,
        // each file's eviction before its entries.
        let state: Record<string, string> = {};
        for (const c of checkpoints) {
          if (c.full) state = {};
          const evicted = c.freeze.evictedUpTo;
          if (evicted !== null && evicted !== undefined) {
            for (const [k, g] of Object.entries(state)) if (JSON.parse(g).end <= evicted) delete state[k];
          }
          assert.deepEqual(c.freeze.removed.flat(), []);
          state = { ...state, ...Object.fromEntries(c.encoded) };
          assert.deepEqual(state, c.expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a table piece that does not hold the entries it says with CHECKPOINT_CORRUPT', () => {
    const corrupt = { name: 'MillraceError', code: 'CHECKPOINT_CORRUPT' };
    assert.throws(() => tableRows([['a'], [0, 1000, 1], [[1]]], 2), {
      ...corrupt,
      message: "a state file's table piece does not hold the 2 entries it says",
    });
    assert.throws(() => tableRows([['a', 'b'], [0, 1000, 1], [[1, 2]]], 2), {
      ...corrupt,
      message: "a state file's table piece has windows or states that do not cover its 2 entries",
    });
    assert.throws(() => table().loadChunk(['s0|a'], [[['a']], [0], [1000], [[1]]], false), {
      ...corrupt,
      message:
        /a state file's chunk of 1 groups does not hold one key column, their windows and 2 state columns/,
    });
  });
});
