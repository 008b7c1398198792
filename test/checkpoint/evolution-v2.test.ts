import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { inspectCheckpoint } from '../../src/checkpoint/inspect.js';
import { verifyCheckpoint } from '../../src/checkpoint/verify.js';
import { formatInspection } from '../../src/cli/checkpoint.js';
import type { StreamingQuery } from '../../src/index.js';
import type { Order } from '../fixtures/jobs/evolution.js';
import {
  assertRefused,
  ids,
  logsOf,
  metadataOf,
  order,
  removeTempDirs,
  runOnce,
  start,
  tempDir,
} from './evolution-harness.js';

/**
 * Query evolution (docs/operations.md) with named sources: `sourceEvolution: true` keeps offsets by source
 * name (offset log v2), so sources may be reordered, added and removed between runs.
 */

after(removeTempDirs);

describe('named sources (sourceEvolution: true, offset log v2)', () => {
  const evolving = { options: { sourceEvolution: true } } as const;

  it('refuses an unnamed source at plan time, before any checkpoint is written', async () => {
    const dir = tempDir();
    const unnamed = (e: Error) => {
      assert.equal((e as { code?: string }).code, 'UNNAMED_STREAMING_SOURCES_WITH_ENFORCEMENT');
      assert.match(e.message, /source 0 \(generator\) has no name/);
      return true;
    };
    await assert.rejects(start(dir, { generator: '-' }, evolving), unnamed);
    await assert.rejects(start(dir, { generator: '-', sourceEvolution: 'yes' }), unnamed);
    assert.deepEqual(readdirSync(dir), [], 'nothing was written');
  });

  it('keeps offsets by source name', async () => {
    const dir = tempDir();
    await runOnce(dir, { sources: 'a,b' }, { a: [order('a1')], b: [order('b1'), order('b2')] }, evolving);
    assert.equal((await metadataOf(dir)).offsetLogFormat, 'v2');
    const entry = await logsOf(dir).readOffsets(0);
    assert.equal(entry?.format, 'v2');
    assert.deepEqual(entry?.sources, [
      { key: 'a', offsets: { 0: 1, 1: 0 } },
      { key: 'b', offsets: { 0: 2, 1: 0 } },
    ]);
    const text = readFileSync(join(dir, 'offsets', '0'))
      .toString()
      .split('\n');
    assert.equal(text[0], 'v2');
    assert.deepEqual(JSON.parse(text[2]!), { name: 'a', offsets: { 0: 1, 1: 0 } });
  });

  it('resumes each source from its own offsets after the sources are reordered', async () => {
    const dir = tempDir();
    const first = await runOnce(
      dir,
      { sources: 'a,b' },
      { a: [order('a1'), order('a2'), order('a3')], b: [order('b1')] },
      evolving,
    );
    const second = await runOnce(
      dir,
      { sources: 'b,a' },
      { a: [order('a4')], b: [order('b2')] },
      { ...evolving, continueFrom: first },
    );
    assert.deepEqual(ids(second.sink('out').rows()).sort(), ['a1', 'a2', 'a3', 'a4', 'b1', 'b2']);
    assert.deepEqual((await logsOf(dir).readOffsets(1))?.sources, [
      { key: 'b', offsets: { 0: 2, 1: 0 } },
      { key: 'a', offsets: { 0: 4, 1: 0 } },
    ]);
  });

  it('starts a source added later from its beginning, and records it', async () => {
    const dir = tempDir();
    const first = await runOnce(dir, { sources: 'a' }, { a: [order('a1')] }, evolving);
    const created = await metadataOf(dir);
    const second = await runOnce(
      dir,
      { sources: 'a,c' },
      { a: [order('a2')], c: [order('c1'), order('c2')] },
      { ...evolving, continueFrom: first },
    );
    assert.deepEqual(ids(second.sink('out').rows()).sort(), ['a1', 'a2', 'c1', 'c2']);
    const metadata = await metadataOf(dir);
    assert.deepEqual(
      metadata.sources.map((s) => [s.index, s.name]),
      [
        [0, 'a'],
        [1, 'c'],
      ],
    );
    assert.notEqual(metadata.fingerprint, created.fingerprint);
    assert.equal(metadata.id, created.id);
  });

  it('retires the name of a removed source for good', async () => {
    const dir = tempDir();
    const first = await runOnce(dir, { sources: 'a,b' }, { a: [order('a1')], b: [order('b1')] }, evolving);
    const second = await runOnce(
      dir,
      { sources: 'a' },
      { a: [order('a2')] },
      { ...evolving, continueFrom: first },
    );
    const rows = ids(second.sink('out').rows());
    // a1 and b1 come from two sources of one run: in either order.
    assert.deepEqual([...rows.slice(0, 2).sort(), rows[2]], ['a1', 'b1', 'a2']);
    const metadata = await metadataOf(dir);
    assert.deepEqual(metadata.retiredSources, ['b']);
    assert.deepEqual(
      metadata.sources.map((s) => s.name),
      ['a'],
    );
    assert.deepEqual(
      (await logsOf(dir).readOffsets(1))?.sources.map((s) => s.key),
      ['a'],
    );

    await assertRefused(
      dir,
      { sources: 'a,b' },
      "source 'b' was removed from this query by an earlier run, and a removed source's name is retired for good",
      evolving,
    );
    // A new name is a new source.
    const third = await runOnce(
      dir,
      { sources: 'a,d' },
      { d: [order('d1')] },
      { ...evolving, continueFrom: second },
    );
    const all = ids(third.sink('out').rows());
    assert.deepEqual([...all.slice(0, 2).sort(), ...all.slice(2)], ['a1', 'b1', 'a2', 'd1']);
    assert.deepEqual((await metadataOf(dir)).retiredSources, ['b']);

    const inspection = await inspectCheckpoint(dir);
    assert.equal(inspection.offsetLogFormat, 'v2');
    const text = formatInspection(inspection);
    assert.match(text, /^ {2}offset log format {2}v2 \(sources kept by name\)$/m);
    assert.match(text, /^ {2}retired: b$/m);
    assert.match(text, /^ {2}source 1 d: partition 0 at 1, partition 1 at 0$/m);
    assert.deepEqual((await verifyCheckpoint(dir)).problems, []);
  });

  it('refuses a source of another kind under a kept name', async () => {
    const dir = tempDir();
    await runOnce(dir, { sources: 'a,b' }, { a: [order('a1')] }, evolving);
    await assertRefused(
      dir,
      { sources: 'a', generator: 'b' },
      "source 'b' (generator): kind changed from memory to generator",
      evolving,
    );
  });

  it('refuses to turn a v1 checkpoint into v2', async () => {
    const dir = tempDir();
    await runOnce(dir, { sources: 'a' }, { a: [order('a1')] });
    await assertRefused(
      dir,
      { sources: 'a' },
      /offset log is v1 .*\. Naming sources requires a new checkpoint or one already in v2/,
      evolving,
    );
  });

  it('refuses to run a v2 checkpoint without sourceEvolution', async () => {
    const dir = tempDir();
    await runOnce(dir, { sources: 'a' }, { a: [order('a1')] }, evolving);
    await assertRefused(dir, { sources: 'a' }, /v2 cannot be turned back into v1\. .*sourceEvolution: true/);
  });

  it("keeps a generated source's schedule under its name, so it follows the source when reordered", async () => {
    const dir = tempDir();
    const params = { sources: 'orders', generator: 'gen' };
    const first = await start(dir, params, evolving);
    try {
      first.clock.advance(2000);
      await first.processAllAvailable();
    } finally {
      await first.stop();
    }
    assert.ok(existsSync(join(dir, 'sources', 'gen', 'schedule')));
    assert.ok(!existsSync(join(dir, 'sources', '0')));
    const generated = (q: StreamingQuery) =>
      q
        .sink<Order>('out')
        .rows()
        .filter((r) => r.card === 'g')
        .map((r) => [r.id, r.ts]);
    assert.deepEqual(generated(first), [
      ['g0', 500],
      ['g1', 1000],
      ['g2', 1500],
      ['g3', 2000],
    ]);

    // Now second, on a clock that starts later: the schedule still starts where the first run's did.
    const second = await start(
      dir,
      { ...params, generatorLast: 'yes' },
      { ...evolving, continueFrom: first, clockStart: 3000 },
    );
    try {
      await second.processAllAvailable();
    } finally {
      await second.stop();
    }
    assert.deepEqual(generated(second), [
      ['g0', 500],
      ['g1', 1000],
      ['g2', 1500],
      ['g3', 2000],
      ['g4', 2500],
      ['g5', 3000],
    ]);
  });
});
