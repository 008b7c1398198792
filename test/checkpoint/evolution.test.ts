import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { verifyCheckpoint } from '../../src/checkpoint/verify.js';
import type { StreamingQuery } from '../../src/index.js';
import type { QueryOptionsInput } from '../../src/plan/query-options.js';
import {
  assertRefused,
  ids,
  metadataOf,
  order,
  type Params,
  removeTempDirs,
  runOnce,
  start,
  tempDir,
} from './evolution-harness.js';

/**
 * Query evolution (docs/operations.md) with offsets kept by source position (v1): which changes of the
 * query a checkpoint follows, and which it refuses. Named sources (v2) are in evolution-v2.test.ts.
 */

after(removeTempDirs);

describe('query evolution: changes a checkpoint follows', () => {
  it('resumes after a filter is added, and again after it is removed, recording the new plan', async () => {
    const dir = tempDir();
    const first = await runOnce(dir, {}, { orders: [order('o1', 5), order('o2', -1)] });
    const created = await metadataOf(dir);
    const second = await runOnce(
      dir,
      { filter: 'positive' },
      { orders: [order('o3', -2), order('o4', 3)] },
      { continueFrom: first },
    );
    assert.deepEqual(ids(second.sink('out').rows()), ['o1', 'o2', 'o4']);
    const changed = await metadataOf(dir);
    assert.equal(changed.id, created.id, 'the same query');
    assert.notEqual(changed.fingerprint, created.fingerprint, 'the new plan is recorded');
    const third = await runOnce(dir, {}, { orders: [order('o5', -3)] }, { continueFrom: second });
    assert.deepEqual(ids(third.sink('out').rows()), ['o1', 'o2', 'o4', 'o5']);
    assert.equal((await metadataOf(dir)).fingerprint, created.fingerprint);
  });

  it('resumes after a projection changes', async () => {
    const dir = tempDir();
    const first = await runOnce(dir, { projection: 'cents' }, { orders: [order('o1', 2)] });
    const second = await runOnce(
      dir,
      { projection: 'keep' },
      { orders: [order('o2', 3)] },
      { continueFrom: first },
    );
    assert.deepEqual(second.sink('out').rows(), [{ ...order('o1', 2), cents: 200 }, { ...order('o2', 3) }]);
  });

  it('resumes across trigger changes: real time, processing time, available now and back', async () => {
    const dir = tempDir();
    const first = await runOnce(dir, {}, { orders: [order('o1'), order('o2')] });
    const second = await runOnce(
      dir,
      { trigger: 'processingTime' },
      { orders: [order('o3')] },
      { continueFrom: first },
    );
    const third = await start(
      dir,
      { trigger: 'availableNow' },
      {
        continueFrom: second,
        initialData: { orders: [order('o4')] },
      },
    );
    assert.equal(await third.awaitTermination(10_000), true, 'availableNow ends by itself');
    const fourth = await runOnce(dir, {}, { orders: [order('o5')] }, { continueFrom: third });
    assert.deepEqual(ids(fourth.sink('out').rows()), ['o1', 'o2', 'o3', 'o4', 'o5']);
    const epochs = fourth
      .sink('out')
      .epochs()
      .map((e) => e.epochId);
    assert.deepEqual(
      epochs,
      [...epochs].sort((a, b) => a - b),
      'epochs go on in order across the runs',
    );
    assert.equal(new Set(epochs).size, epochs.length);
  });

  it('resumes with a changed maxRowsPerTrigger, which shapes the batches from then on', async () => {
    const dir = tempDir();
    const rows = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => order(`o${from + i}`));
    const first = await start(
      dir,
      { trigger: 'availableNow', maxRowsPerTrigger: 2 },
      {
        initialData: { orders: { 0: rows(0, 4) } },
      },
    );
    assert.equal(await first.awaitTermination(10_000), true);
    const second = await start(
      dir,
      { trigger: 'availableNow', maxRowsPerTrigger: 3 },
      {
        continueFrom: first,
        initialData: { orders: { 0: rows(4, 7) } },
      },
    );
    assert.equal(await second.awaitTermination(10_000), true);
    assert.deepEqual(
      second
        .sink('out')
        .epochs()
        .map((e) => [e.epochId, ids(e.rows)]),
      [
        [0, ['o0', 'o1']],
        [1, ['o2', 'o3']],
        [2, ['o4', 'o5', 'o6']],
      ],
    );
  });

  it("keeps an aggregation's state when a filter is added before it, though the operator's id moves", async () => {
    const dir = tempDir();
    const params = { shape: 'aggregate' };
    const first = await runOnce(dir, params, {
      orders: [order('o1', 1, 'c1'), order('o2', 1, 'c1'), order('o3', 1, 'c2')],
    });
    const stateful = (await metadataOf(dir)).stateful;
    assert.deepEqual(
      stateful.map((s) => [s.operatorId, s.kind, s.partitions]),
      [[1, 'aggregate', 2]],
    );
    // source 0, filter 1, aggregate 2: its state stays under id 1.
    const second = await runOnce(
      dir,
      { ...params, filter: 'positive' },
      { orders: [order('o4', 5, 'c1'), order('o5', -1, 'c1')] },
      { continueFrom: first },
    );
    assert.deepEqual(second.sink('out').rows().at(-1), { card: 'c1', n: 3 });
    assert.deepEqual(readdirSync(join(dir, 'state')), ['1'], 'no state was started elsewhere');
    assert.deepEqual(
      (await metadataOf(dir)).stateful.map((s) => s.operatorId),
      [1],
    );
    const third = await runOnce(dir, params, { orders: [order('o6', 1, 'c2')] }, { continueFrom: second });
    assert.deepEqual(third.sink('out').rows().at(-1), { card: 'c2', n: 2 });
    assert.deepEqual((await verifyCheckpoint(dir)).problems, []);
  });

  it('resumes after the sink changes between memory and foreach', async () => {
    const dir = tempDir();
    const first = await runOnce(dir, {}, { orders: [order('o1')] });
    const second = await runOnce(
      dir,
      { sink: 'foreach' },
      { orders: [order('o2')] },
      { continueFrom: first },
    );
    const third = await runOnce(dir, {}, { orders: [order('o3')] }, { continueFrom: second });
    assert.deepEqual(ids(third.sink('out').rows()), ['o3'], 'o2 was committed by the foreach run');
  });

  it('does not rewrite the metadata when nothing changed', async () => {
    const dir = tempDir();
    const first = await runOnce(dir, { shape: 'aggregate' }, { orders: [order('o1')] });
    const before = readFileSync(join(dir, 'metadata'));
    await runOnce(dir, { shape: 'aggregate' }, { orders: [order('o2')] }, { continueFrom: first });
    assert.deepEqual(readFileSync(join(dir, 'metadata')), before);
  });
});

interface RefusedCase {
  readonly change: string;
  readonly before: Params;
  readonly after: Params;
  readonly options?: QueryOptionsInput;
  readonly message: RegExp | string;
}

const filesRoot = tempDir();
const outPath = (name: string) => join(filesRoot, name);

const refusedCases: readonly RefusedCase[] = [
  {
    change: 'a source added (v1)',
    before: {},
    after: { sources: 'orders,refunds' },
    message: 'the number of sources changed from 1 to 2',
  },
  {
    change: 'a source removed (v1)',
    before: { sources: 'orders,refunds' },
    after: {},
    message: 'the number of sources changed from 2 to 1',
  },
  {
    change: "a source's kind",
    before: {},
    after: { sources: '', generator: 'orders' },
    message: "source 0 'orders' (generator): kind changed from memory to generator",
  },
  {
    change: 'sources reordered (v1)',
    before: { sources: 'orders,refunds' },
    after: { sources: 'refunds,orders' },
    message: "source 0: name changed from 'orders' to 'refunds'",
  },
  {
    change: "a source's partition count",
    before: {},
    after: { partitions: 3 },
    message: "source 0 'orders' (memory): partitions changed from 2 to 3",
  },
  {
    change: 'the kind of the stateful operator',
    before: { shape: 'aggregate' },
    after: { shape: 'dedup', keys: 'id' },
    message: 'stateful operator 2: kind changed from aggregate to dedup',
  },
  {
    change: 'grouping keys',
    before: { shape: 'aggregate' },
    after: { shape: 'aggregate', keys: 'card,merchant' },
    message: 'stateful operator 1 (aggregate): grouping keys changed from [card] to [card, merchant]',
  },
  {
    change: 'the window',
    before: { shape: 'aggregate', window: '10s' },
    after: { shape: 'aggregate', window: '20s' },
    message:
      'stateful operator 2 (aggregate): window changed from window(ts, 10000 ms) to window(ts, 20000 ms)',
  },
  {
    change: 'aggregations',
    before: { shape: 'aggregate' },
    after: { shape: 'aggregate', aggs: 'count,total' },
    message:
      'stateful operator 1 (aggregate): aggregations changed from [n: count(*)] to [n: count(*), total: sum(amount)]',
  },
  {
    change: 'deduplication keys',
    before: { shape: 'dedup', keys: 'id' },
    after: { shape: 'dedup', keys: 'id,card' },
    message: 'stateful operator 2 (dedup): deduplication keys changed from [id] to [id, card]',
  },
  {
    change: 'withinWatermark',
    before: { shape: 'dedup', keys: 'id' },
    after: { shape: 'dedup', keys: 'id', within: 'yes' },
    message: 'stateful operator 2 (dedup): changed from dropDuplicates to dropDuplicatesWithinWatermark',
  },
  {
    change: 'a stateful operator removed',
    before: { shape: 'aggregate' },
    after: {},
    message: 'the number of stateful operators changed from 1 (aggregate 1) to 0',
  },
  {
    change: 'a stateful operator added',
    before: {},
    after: { shape: 'aggregate' },
    message: 'the number of stateful operators changed from 0 to 1 (aggregate 1)',
  },
  {
    change: 'state partitions',
    before: { shape: 'aggregate' },
    after: { shape: 'aggregate' },
    options: { shufflePartitions: 3 },
    message:
      'stateful operator 1 (aggregate): state partitions changed from 2 to 3 (its state is split by key over 2 partitions; set shufflePartitions: 2)',
  },
  {
    change: 'a files sink replaced by a memory sink',
    before: { sink: 'files', path: outPath('to-memory') },
    after: {},
    message: 'the sink changed from files to memory',
  },
  {
    change: 'a memory sink replaced by a files sink',
    before: {},
    after: { sink: 'files', path: outPath('from-memory') },
    message: 'the sink changed from memory to files',
  },
  {
    change: "a files sink's directory",
    before: { sink: 'files', path: outPath('moved-a') },
    after: { sink: 'files', path: outPath('moved-b') },
    message: `the files sink's directory changed from ${outPath('moved-a')} to ${outPath('moved-b')}`,
  },
  {
    change: 'several things at once',
    before: { shape: 'aggregate' },
    after: { shape: 'aggregate', keys: 'merchant', aggs: 'count,total' },
    message:
      /grouping keys changed from \[card\] to \[merchant\]; stateful operator 1 \(aggregate\): aggregations changed .*Undo these changes/,
  },
];

/** A checkpoint of a version of the query, made on first use and shared by the changes refused on it. */
interface Base {
  readonly dir: string;
  readonly params: Params;
  readonly source: string;
  readonly query: StreamingQuery;
}

const bases = new Map<string, Promise<Base>>();

function baseFor(params: Params): Promise<Base> {
  const key = JSON.stringify(params);
  let base = bases.get(key);
  if (base === undefined) {
    base = (async () => {
      const dir = tempDir();
      const source = (params.sources as string | undefined)?.split(',')[0] ?? 'orders';
      const query = await runOnce(dir, params, { [source]: [order('o1')] });
      return { dir, params, source, query };
    })();
    bases.set(key, base);
  }
  return base;
}

describe('query evolution: changes a checkpoint refuses', () => {
  for (const c of refusedCases) {
    it(`refuses ${c.change}, naming it, and leaves the checkpoint as it was`, async () => {
      const { dir } = await baseFor(c.before);
      await assertRefused(dir, c.after, c.message, c.options ? { options: c.options } : {});
    });
  }

  it('leaves every checkpoint it refused a change on to the query as it was, which resumes there', async () => {
    assert.ok(bases.size > 0);
    for (const base of bases.values()) {
      const { dir, params, source, query } = await base;
      const committed = readdirSync(join(dir, 'commits')).length;
      const again = await runOnce(dir, params, { [source]: [order('o2')] }, { continueFrom: query });
      assert.equal(again.exception, null);
      assert.equal(readdirSync(join(dir, 'commits')).length, committed + 1, `${dir}: one more epoch`);
    }
  });
});
