import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { countPerCardAndSecond } from '../../native-bench/micro/aggregate-alone.js';
import { StateCheckpointer } from '../../src/checkpoint/state-checkpointer.js';
import { type Group, groupCodec } from '../../src/operators/aggregate-codec.js';
import { agg } from '../../src/plan/aggregates.js';
import { InMemoryStateStore } from '../../src/state/state-store.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const tempDir = tempDirs('millrace-aggregate-restore');

/** The aggregation alone, as a real-time task drives it: rows, then watermarks in stream order. */
function operator(mode: 'update' | 'append') {
  const out: unknown[] = [];
  let watermark = Number.NEGATIVE_INFINITY;
  const [op] = countPerCardAndSecond({
    delay: '1 second',
    mode,
    out: { push: (row) => out.push(row) },
    watermark: () => watermark,
  });
  return {
    op: op!,
    out,
    row: (card: number, ts: number) => op!.push({ cardId: `card-${card}`, ts }),
    watermark: (w: number) => {
      if (w <= watermark) return;
      watermark = w;
      op!.onWatermark(w);
    },
  };
}

type Event = { row: { card: number; ts: number } } | { watermark: number } | { load: number };

const event = (maxTs: number): fc.Arbitrary<Event> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ row: fc.record({ card: fc.nat(40), ts: fc.nat(maxTs) }) }) },
    { weight: 1, arbitrary: fc.record({ watermark: fc.nat(maxTs) }) },
    { weight: 1, arbitrary: fc.record({ load: fc.integer({ min: 1, max: 64 }) }) },
  );

function play(a: ReturnType<typeof operator>, events: readonly Event[]): void {
  for (const e of events) {
    if ('row' in e) a.row(e.row.card, e.row.ts);
    else if ('watermark' in e) a.watermark(e.watermark);
    else a.op.store.loadSome(e.load);
  }
}

/** Runs `before`, checkpoints it as version 1, and returns where. */
async function checkpointed(mode: 'update' | 'append', before: readonly Event[]): Promise<string> {
  const dir = tempDir();
  const a = operator(mode);
  let durable = false;
  const cp = new StateCheckpointer(a.op.store, dir, 0, 0, 10, {
    durable: () => {
      durable = true;
    },
    failed: (e) => {
      throw e;
    },
  });
  play(a, before);
  cp.epochEnded(0);
  await cp.settle();
  assert.equal(durable, true);
  return dir;
}

function restored(mode: 'update' | 'append', dir: string, lazy: boolean, watermark: number, version = 1) {
  const a = operator(mode);
  const cp = new StateCheckpointer(a.op.store, dir, 0, 0, 10, {
    durable: () => {},
    failed: (e) => {
      throw e;
    },
  });
  cp.restore(version, lazy);
  a.op.restored();
  // The task hands the restored watermark over before the first row.
  a.watermark(watermark);
  return { a, cp };
}

const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

const contentOf = (a: ReturnType<typeof operator>) =>
  Object.fromEntries([...a.op.table!.entries()].sort(([x], [y]) => (x < y ? -1 : 1)));

describe('aggregation state restored lazily (real-time mode)', () => {
  for (const mode of ['update', 'append'] as const) {
    it(`${mode} mode: a lazy restore emits, evicts and counts exactly as an eager one, whichever key groups load when`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(event(4000), { maxLength: 60 }),
          fc.array(event(8000), { maxLength: 60 }),
          async (before, after) => {
            const dir = await checkpointed(mode, before);
            const lastWatermark = Math.max(
              Number.NEGATIVE_INFINITY,
              ...before.flatMap((e) => ('watermark' in e ? [e.watermark] : [])),
            );
            const eager = restored(mode, dir, false, lastWatermark);
            const lazy = restored(mode, dir, true, lastWatermark);
            play(eager.a, after);
            play(lazy.a, after);
            // Update mode emits a row per input row, in order; append mode emits a closed window's
            // groups in no promised order.
            if (mode === 'update') assert.deepEqual(lazy.a.out, eager.a.out);
            else assert.deepEqual(sorted(lazy.a.out), sorted(eager.a.out));
            assert.deepEqual(contentOf(lazy.a), contentOf(eager.a));
            // Once loaded (the metrics count a group not loaded yet until it loads, evicted or not),
            // and once the key ids of dropped windows are released (a few per row).
            for (let i = 0; i < 8; i++) for (const x of [eager, lazy]) x.a.op.table!.tidy();
            assert.deepEqual(lazy.a.op.stateCounters(), eager.a.op.stateCounters());
            await Promise.all([eager.cp.settle(), lazy.cp.settle()]);
          },
        ),
        { numRuns: 80 },
      );
    });
  }

  it('the first row needs only its own key group; the others load between turns of the event loop', async () => {
    const before: Event[] = [];
    for (let card = 0; card < 2000; card++) before.push({ row: { card, ts: 1500 } });
    const dir = await checkpointed('update', before);
    const { a, cp } = restored('update', dir, true, Number.NEGATIVE_INFINITY);
    assert.equal(a.op.store.keyGroupsToLoad, 256);
    assert.equal(a.op.stateCounters().numRowsTotal, 2000);
    a.row(7, 1200);
    assert.deepEqual(a.out, [{ cardId: 'card-7', window: { start: 1000, end: 2000 }, n: 2 }]);
    assert.equal(a.op.store.keyGroupsToLoad, 255);
    // A watermark past the window: groups still unloaded are dropped as they load.
    a.watermark(2000);
    while (a.op.table!.restoring) await new Promise((r) => setImmediate(r));
    await cp.settle();
    assert.equal(a.op.stateCounters().numRowsTotal, 0);
    assert.equal(a.op.stateCounters().numRowsRemoved, 2000);
  });
});

describe('aggregation state written by an older version (composite keys, format 3)', () => {
  it('restores into the group table, alone and under the changelogs the table writes after it', async () => {
    const dir = tempDir();
    const hooks = (durable: number[]) => ({
      durable: (e: number) => durable.push(e),
      failed: (e: unknown) => {
        throw e;
      },
    });
    // What an InMemoryStateStore of groups wrote: entries, then removals, by composite key.
    const old = new InMemoryStateStore<Group>(64, groupCodec([agg.count().aggregator]));
    const oldCp = new StateCheckpointer(old, dir, 0, 0, 10, hooks([]));
    for (const start of [1000, 2000]) {
      for (let card = 0; card < 40; card++) {
        old.put(`s${start}|card-${card}`, {
          keys: [`card-${card}`],
          start,
          end: start + 1000,
          states: [card + 1],
        });
      }
    }
    oldCp.epochEnded(0);
    for (let card = 0; card < 10; card++) old.remove(`s1000|card-${card}`);
    old.put('s2000|card-3', { keys: ['card-3'], start: 2000, end: 3000, states: [99] });
    oldCp.epochEnded(1);
    await oldCp.settle();
    const expected = Object.fromEntries([...old.entries()].sort(([x], [y]) => (x < y ? -1 : 1)));

    // The table restores version 2, counts on, evicts a window, and writes version 3 (T and X pieces).
    const a = operator('update');
    const cp = new StateCheckpointer(a.op.store, dir, 0, 0, 10, hooks([]));
    cp.restore(2);
    a.op.restored();
    assert.deepEqual(contentOf(a), expected);
    a.row(3, 2500);
    a.row(77, 3100);
    a.watermark(2000);
    cp.epochEnded(2);
    await cp.settle();
    const now = contentOf(a);
    assert.deepEqual(
      Object.keys(now).sort(),
      [...Object.keys(expected).filter((k) => k.startsWith('s2000|')), 's3000|card-77'].sort(),
    );
    assert.deepEqual(now['s2000|card-3']?.states, [100]);

    // The chain of both versions' files restores to it, eagerly or a key group at a time.
    for (const lazy of [false, true]) {
      const b = restored('update', dir, lazy, 2000, 3);
      b.a.op.table!.loadAll();
      assert.deepEqual(contentOf(b.a), now);
      await b.cp.settle();
    }
  });
});
