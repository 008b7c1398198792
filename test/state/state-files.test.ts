import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { writeChunksAtomic } from '../../src/checkpoint/files.js';
import { StateCheckpointer } from '../../src/checkpoint/state-checkpointer.js';
import { packStatePiece, readStateFile, stateFileName } from '../../src/checkpoint/state-files.js';
import { groupCodec } from '../../src/operators/aggregate-codec.js';
import { agg } from '../../src/plan/aggregates.js';
import { InMemoryStateStore } from '../../src/state/state-store.js';
import type { StateCodec } from '../../src/state/store-contract.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const tempDir = tempDirs('millrace-state-files');

/** An aggregation's group, as the operator keeps it. */
interface Group {
  keys: unknown[];
  start: number;
  end: number;
  states: unknown[];
}

/** A count and an average (a state the codec must copy): two key columns, two state columns. */
const codec = groupCodec([agg.count().aggregator, agg.avg('amount').aggregator]) as StateCodec<Group>;

function group(card: number, start: number, n: number): Group {
  return {
    keys: [`card-${card}`, card % 3 === 0 ? null : card],
    start,
    end: start + 1000,
    states: [n, [n * 1.5, n]],
  };
}

/** The store's content, in a form that compares whatever the insertion order. */
function contentOf(store: InMemoryStateStore<Group>): Record<string, Group> {
  return Object.fromEntries([...store.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Runs the checkpointer's epoch end and waits until its file is durable, running the slices an idle
 * host would run meanwhile.
 */
async function endEpoch(cp: StateCheckpointer, durable: number[], epoch: number): Promise<void> {
  cp.epochEnded(epoch);
  for (let turns = 0; !durable.includes(epoch); turns++) {
    assert.ok(turns < 100_000, `epoch ${epoch} never became durable`);
    cp.idleSlice();
    await new Promise((r) => setImmediate(r));
  }
}

function checkpointer(
  store: InMemoryStateStore<Group>,
  dir: string,
  durable: number[] = [],
): StateCheckpointer {
  return new StateCheckpointer(store as InMemoryStateStore<unknown>, dir, 7, 1, 3, {
    durable: (e) => durable.push(e),
    failed: (e) => {
      throw e;
    },
  });
}

function restore(dir: string, version: number): InMemoryStateStore<Group> {
  const store = new InMemoryStateStore<Group>(64, codec);
  checkpointer(store, dir).restore(version);
  return store;
}

/** Writes versions 1..n of a state built by `epochs` of updates; returns each version's content. */
async function writeVersions(
  dir: string,
  epochs: { card: number; remove: boolean; start: number }[][],
): Promise<Record<string, Group>[]> {
  const store = new InMemoryStateStore<Group>(64, codec);
  const durable: number[] = [];
  const cp = checkpointer(store, dir, durable);
  const expected: Record<string, Group>[] = [];
  for (const [epoch, updates] of epochs.entries()) {
    for (const u of updates) {
      const key = `s${u.start}|card-${u.card}`;
      if (u.remove) {
        store.remove(key);
        continue;
      }
      // The operator's update: in place, then marked written.
      const g = store.get(key) ?? group(u.card, u.start, 0);
      g.states[0] = (g.states[0] as number) + 1;
      (g.states[1] as number[])[0]! += 2;
      (g.states[1] as number[])[1]!++;
      store.put(key, g);
    }
    expected.push(structuredClone(contentOf(store)));
    await endEpoch(cp, durable, epoch);
  }
  await cp.settle();
  return expected;
}

const updates = fc.array(
  fc.array(
    fc.record({
      card: fc.integer({ min: 0, max: 30 }),
      remove: fc.boolean(),
      start: fc.constantFrom(0, 1000),
    }),
    { maxLength: 25 },
  ),
  { minLength: 1, maxLength: 8 },
);

describe('state files', () => {
  it('the group codec packs a chunk as columns and decodes it to equal groups', () => {
    const groups = [group(1, 1_764_000_000_000, 3), group(3, 0, 1), group(-2, -1000, 0)];
    const encoder = codec.chunkEncoder!();
    for (const g of groups) encoder.add(g);
    const packed = encoder.finish();
    // Detached: the groups change in place afterwards.
    groups[0]!.states[0] = 99;
    (groups[0]!.states[1] as number[])[0] = 99;
    assert.deepEqual(packed, [
      [
        ['card-1', 'card-3', 'card--2'],
        [1, null, -2],
      ],
      [1_764_000_000_000, 0, -1000],
      [1_764_000_001_000, 1000, 0],
      [
        [3, 1, 0],
        [
          [4.5, 3],
          [1.5, 1],
          [0, 0],
        ],
      ],
    ]);
    groups[0]!.states = [3, [4.5, 3]];
    assert.deepEqual(codec.decodeChunk!(packed, 3), groups);
    assert.deepEqual(codec.decodeChunk!(codec.chunkEncoder!().finish(), 0), []);
  });

  it('every version restores to the state of its epoch end: snapshots, changelogs, removals and re-creations in order', async () => {
    await fc.assert(
      fc.asyncProperty(updates, async (epochs) => {
        const dir = tempDir();
        const expected = await writeVersions(dir, epochs);
        // Version v is the state at the end of epoch v − 1; version 3 and 6 are snapshots.
        for (let v = 1; v <= epochs.length; v++)
          assert.deepEqual(contentOf(restore(dir, v)), expected[v - 1]);
      }),
      { numRuns: 40 },
    );
  });

  it('a lazy restore reads, writes, removes and counts as an eager one, whichever key groups load first, and its next checkpoints hold the same state', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('load' as const), groups: fc.integer({ min: 1, max: 40 }) }),
      fc.record({
        kind: fc.constantFrom('get' as const, 'put' as const, 'remove' as const),
        card: fc.integer({ min: 0, max: 30 }),
        start: fc.constantFrom(0, 1000),
      }),
    );
    await fc.assert(
      fc.asyncProperty(updates, fc.array(op, { maxLength: 30 }), fc.boolean(), async (epochs, ops, drop) => {
        const dir = tempDir();
        await writeVersions(dir, epochs);
        const version = epochs.length;
        const eager = new InMemoryStateStore<Group>(64, codec);
        const lazy = new InMemoryStateStore<Group>(64, codec);
        checkpointer(eager, dir).restore(version);
        // Dropping on load: the entries of window 1000 go, as a watermark past them would evict them.
        const keep = (_key: string, g: unknown) => !drop || (g as Group).start !== 1000;
        if (drop) for (const [key, g] of [...eager.entries()]) if (!keep(key, g)) eager.remove(key);
        const durable: number[] = [];
        const lazyCp = checkpointer(lazy, dir, durable);
        lazy.keepRestored(keep);
        lazyCp.restore(version, true);
        assert.equal(lazy.restoring, true);
        // No await until the ops are done: the background loading does not run meanwhile.
        for (const o of ops) {
          if (o.kind === 'load') {
            lazy.loadSome(o.groups);
          } else {
            const key = `s${o.start}|card-${o.card}`;
            if (o.kind === 'get') assert.deepEqual(lazy.get(key), eager.get(key), `get ${key}`);
            else if (o.kind === 'remove') {
              eager.remove(key);
              lazy.remove(key);
            } else if (!drop || o.start !== 1000) {
              // (Nothing writes to a window a watermark evicted.)
              for (const store of [eager, lazy]) {
                const g = store.get(key) ?? group(o.card, o.start, 0);
                g.states[0] = (g.states[0] as number) + 1;
                store.put(key, g);
              }
            }
          }
          // Counted from the files' totals: exact, dropped entries included until they load.
          if (!drop) {
            assert.equal(lazy.size, eager.size);
            assert.equal(lazy.metrics().memoryUsedBytes, eager.metrics().memoryUsedBytes);
          }
        }
        // The next version, written while groups may still be unloaded, restores (with the same
        // filter) to what the eager store holds.
        lazyCp.epochEnded(version);
        await lazyCp.settle();
        const again = new InMemoryStateStore<Group>(64, codec);
        again.keepRestored(keep);
        checkpointer(again, dir).restore(version + 1, true);
        assert.deepEqual(contentOf(again), contentOf(eager));
        assert.deepEqual(contentOf(lazy), contentOf(eager));
        assert.deepEqual(lazy.metrics(), eager.metrics());
        assert.equal(lazy.restoring, false);
      }),
      { numRuns: 60 },
    );
  });

  it('files of format 1 (one [key, value] pair per entry) still restore', async () => {
    const dir = tempDir();
    const stateDir = join(dir, 'state', '7', '1');
    mkdirSync(stateDir, { recursive: true });
    const header = (version: number, kind: 'snapshot' | 'changelog') => ({
      format: 1,
      kind,
      version,
      operatorId: 7,
      partition: 1,
    });
    const a = group(1, 0, 2);
    const b = group(2, 0, 5);
    const c = group(3, 1000, 1);
    await writeChunksAtomic(join(stateDir, stateFileName(3, 'snapshot')), [
      packStatePiece(header(3, 'snapshot')),
      packStatePiece([
        'w',
        [
          ['a', codec.encode(a)],
          ['b', codec.encode(b)],
        ],
      ]),
      packStatePiece(['end', 2, 0]),
    ]);
    await writeChunksAtomic(join(stateDir, stateFileName(4, 'changelog')), [
      packStatePiece(header(4, 'changelog')),
      packStatePiece(['w', [['c', codec.encode(c)]]]),
      packStatePiece(['r', ['a']]),
      packStatePiece(['end', 1, 1]),
    ]);
    assert.deepEqual(contentOf(restore(dir, 3)), { a, b });
    assert.deepEqual(contentOf(restore(dir, 4)), { b, c });
    const content = readStateFile(join(stateDir, stateFileName(4, 'changelog')), {
      kind: 'changelog',
      version: 4,
      operatorId: 7,
      partition: 1,
    });
    assert.equal(content.header.format, 1);
    assert.deepEqual(content.chunks[0]!.keys, ['c']);
  });

  it('a file of a format this version does not know is refused, naming the file', async () => {
    const dir = tempDir();
    const path = join(dir, stateFileName(1, 'changelog'));
    await writeChunksAtomic(path, [
      packStatePiece({ format: 9, kind: 'changelog', version: 1, operatorId: 7, partition: 1 }),
      packStatePiece(['end', 0, 0]),
    ]);
    assert.throws(
      () => readStateFile(path, { kind: 'changelog', version: 1, operatorId: 7, partition: 1 }),
      (e: Error) => e.message.includes(path) && e.message.includes('format 9'),
    );
  });

  it("a checkpoint is encoded in the host's idle time, and in the event loop's turns only while two more epochs wait behind it", async () => {
    const dir = tempDir();
    const store = new InMemoryStateStore<Group>(64, codec);
    const durable: number[] = [];
    const cp = checkpointer(store, dir, durable);
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
    };
    const untilDurable = async (epoch: number, idle: boolean) => {
      for (let turn = 0; !durable.includes(epoch); turn++) {
        assert.ok(turn < 100_000, `epoch ${epoch} never became durable (durable: ${durable})`);
        if (idle) cp.idleSlice();
        await turns(1);
      }
    };
    for (let card = 0; card < 3000; card++) store.put(`s0|card-${card}`, group(card, 0, 1));
    // Version 3 (minDeltasForSnapshot 3) is a snapshot of the 3 000 groups.
    cp.epochEnded(2);
    await turns(50);
    assert.equal(cp.waiting, 1, 'no idle time given: nothing is encoded');
    cp.epochEnded(3);
    await turns(50);
    assert.equal(cp.waiting, 2, 'one epoch behind: still waiting for idle time');
    cp.epochEnded(4);
    await turns(50);
    assert.equal(cp.waiting, 2, 'two epochs behind: the turns caught up with the oldest');
    await untilDurable(2, false);
    await untilDurable(4, true);
    assert.deepEqual(durable, [2, 3, 4], 'in order');
    store.put('s0|card-1', group(1, 0, 5));
    cp.epochEnded(5);
    await turns(50);
    assert.equal(cp.waiting, 1);
    await untilDurable(5, true);
    assert.equal(cp.idleSlice(), false, 'nothing left for idle time');
    await cp.settle();
    assert.deepEqual(contentOf(restore(dir, 6)), contentOf(store));
  });
});
