import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type StartOptions, type StreamingQuery, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const fixture = (name: string) => new URL(`../fixtures/jobs/${name}.js`, import.meta.url);

const tempDir = tempDirs('millrace-state');

interface Scenario {
  job: URL;
  params: Record<string, string | number>;
  source: string;
  sink: string;
  /** Rows added before each processAllAvailable, by partition (or to partition 0). */
  batches: (unknown[] | Record<number, unknown[]>)[];
  options?: StartOptions['options'];
}

function add(q: StreamingQuery, source: string, batch: unknown[] | Record<number, unknown[]>): void {
  if (Array.isArray(batch)) q.source(source).addData(batch);
  else for (const [p, rows] of Object.entries(batch)) q.source(source).addData(rows, Number(p));
}

/** Every batch in one run. */
async function continuous(s: Scenario): Promise<unknown[]> {
  const q = await startQuery(s.job, { params: s.params, clock: 'manual', options: s.options });
  try {
    for (const batch of s.batches) {
      add(q, s.source, batch);
      await q.processAllAvailable();
    }
    return q.sink(s.sink).rows();
  } finally {
    await q.stop();
  }
}

/** A new run for every batch, each resuming the checkpoint the previous one left. */
async function restartedEachBatch(s: Scenario, dir = tempDir()): Promise<unknown[]> {
  let previous: StreamingQuery | undefined;
  for (const batch of s.batches) {
    const q = await startQuery(s.job, {
      params: s.params,
      clock: 'manual',
      options: s.options,
      checkpointLocation: dir,
      continueFrom: previous,
    });
    try {
      add(q, s.source, batch);
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    previous = q;
  }
  return previous!.sink(s.sink).rows();
}

const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

async function sameOutput(s: Scenario, ordered = false): Promise<unknown[]> {
  const expected = await continuous(s);
  const actual = await restartedEachBatch(s);
  if (ordered) assert.deepEqual(actual, expected);
  else assert.deepEqual(sorted(actual), sorted(expected));
  return actual;
}

const at = (hh: number, mm: number) => Date.UTC(2026, 0, 15, hh, mm);
const sale = (amount: number, hh: number, mm: number) => ({ amount, ts: at(hh, mm) });
const hour = (hh: number) => ({ start: at(hh, 0), end: at(hh + 1, 0) });
const revenue = (params: Record<string, string>): Scenario => ({
  job: fixture('hourly-revenue'),
  params,
  source: 'sales',
  sink: 'revenue',
  batches: [[sale(15, 14, 40), sale(10, 14, 30), sale(30, 15, 10)], [sale(20, 15, 20)], [sale(1, 15, 21)]],
});

describe('state survives a restart', () => {
  it('the worked example in update mode, real time: [15:00,16:00) goes on from 30 to 50', async () => {
    const rows = await sameOutput(revenue({ mode: 'update' }), true);
    assert.deepEqual(rows, [
      { window: hour(14), total: 15 },
      { window: hour(14), total: 25 },
      { window: hour(15), total: 30 },
      { window: hour(15), total: 50 },
      { window: hour(15), total: 51 },
    ]);
  });

  it('the worked example in append mode, real time: the watermark and the open windows come back', async () => {
    const rows = await sameOutput(revenue({ mode: 'append' }), true);
    assert.deepEqual(rows, [{ window: hour(14), total: 25 }]);
  });

  for (const mode of ['update', 'append', 'complete']) {
    it(`the worked example in ${mode} mode, micro-batch`, async () => {
      await sameOutput(revenue({ mode, trigger: 'microBatch' }), true);
    });
  }

  it('every built-in aggregate, a user aggregate without serialize, and approximate percentiles', async () => {
    const payments = (k: number) =>
      Array.from({ length: 40 }, (_, i) => ({
        card: `c${(i * 7 + k) % 5}`,
        amount: ((i * 13 + k) % 97) + 1,
        ts: 0,
      }));
    await sameOutput({
      job: fixture('aggregations'),
      params: { case: 'per-card' },
      source: 'payments',
      sink: 'out',
      // One source partition per batch: rows of two partitions would interleave differently.
      batches: [{ 0: payments(1) }, { 1: payments(2) }, { 0: payments(3) }, { 1: payments(4) }],
    });
    const rows = await sameOutput({
      job: fixture('aggregations'),
      params: { case: 'percentiles' },
      source: 'payments',
      sink: 'out',
      batches: [payments(1), payments(2), payments(3)],
    });
    assert.equal(rows.length, 120);
  });

  it('session windows: open sessions are restored and merge with rows of the next run', async () => {
    const line = (sentence: string, t: number) => ({ sentence, t });
    const rows = await sameOutput({
      job: fixture('sessions'),
      params: { mode: 'append', trigger: 'realTime' },
      source: 'lines',
      sink: 'sessions',
      batches: [[line('a b', 1), line('a', 5)], [line('b c', 12), line('a', 14)], [line('z', 100)]],
    });
    assert.deepEqual(
      sorted(rows),
      sorted([
        // a@1, a@5 and (after the restart) a@14 are one session; b@1 and b@12 are 11 s apart: two.
        { sessionId: 'a', window: { start: 1000, end: 24_000 }, numEvents: 3 },
        { sessionId: 'b', window: { start: 1000, end: 11_000 }, numEvents: 1 },
        { sessionId: 'b', window: { start: 12_000, end: 22_000 }, numEvents: 1 },
        { sessionId: 'c', window: { start: 12_000, end: 22_000 }, numEvents: 1 },
      ]),
    );
  });

  for (const c of ['plain', 'watermarked', 'within']) {
    it(`dropDuplicates (${c}): a key seen before the restart is still a duplicate after it`, async () => {
      const tx = (id: string, s: number) => ({ txId: id, ts: s * 1000 });
      const rows = await sameOutput({
        job: fixture('dedup'),
        params: { case: c },
        source: 'txs',
        sink: 'out',
        batches: [
          { 0: [tx('a', 1), tx('b', 2)] },
          { 1: [tx('a', 1), tx('c', 3)] },
          { 0: [tx('b', 2), tx('a', 1)] },
        ],
      });
      assert.deepEqual(sorted(rows), sorted([tx('a', 1), tx('b', 2), tx('c', 3)]));
    });
  }

  it('writes a snapshot every minDeltasForSnapshot versions and restores from it and the changelogs after', async () => {
    const dir = tempDir();
    const s: Scenario = {
      job: fixture('aggregations'),
      params: { case: 'per-card' },
      source: 'payments',
      sink: 'out',
      options: { minDeltasForSnapshot: 2 },
      batches: Array.from({ length: 5 }, (_, k) => ({ 0: [{ card: `c${k % 2}`, amount: k + 1, ts: 0 }] })),
    };
    const expected = await continuous(s);
    const actual = await restartedEachBatch(s, dir);
    assert.deepEqual(sorted(actual), sorted(expected));
    // Five epochs: versions 1..5; 2 and 4 are snapshots.
    const operators = readdirSync(join(dir, 'state'));
    assert.equal(operators.length, 1, 'one stateful operator');
    for (const p of ['0', '1']) {
      assert.deepEqual(
        readdirSync(join(dir, 'state', operators[0]!, p)).sort(),
        ['1.changelog', '2.snapshot', '3.changelog', '4.snapshot', '5.changelog'].sort(),
      );
    }
  });

  it('removes log and state files that no retained epoch needs (minBatchesToRetain)', async () => {
    const dir = tempDir();
    const s: Scenario = {
      job: fixture('aggregations'),
      params: { case: 'per-card' },
      source: 'payments',
      sink: 'out',
      options: { minDeltasForSnapshot: 2, minBatchesToRetain: 2 },
      batches: Array.from({ length: 5 }, (_, k) => ({ 0: [{ card: 'c', amount: k + 1, ts: 0 }] })),
    };
    const rows = await restartedEachBatch(s, dir);
    assert.equal((rows.at(-1) as { total: number }).total, 15);
    // Epochs 3 and 4 are retained; epoch 3's state (version 4) restores from 4.snapshot.
    assert.deepEqual(readdirSync(join(dir, 'offsets')).sort(), ['3', '4']);
    assert.deepEqual(readdirSync(join(dir, 'commits')).sort(), ['3', '4']);
    const [operator] = readdirSync(join(dir, 'state'));
    for (const p of ['0', '1']) {
      assert.deepEqual(readdirSync(join(dir, 'state', operator!, p)).sort(), ['4.snapshot', '5.changelog']);
    }
    // And the checkpoint still resumes.
    const q = await startQuery(s.job, { params: s.params, clock: 'manual', checkpointLocation: dir });
    q.source('payments').addData([{ card: 'c', amount: 100, ts: 0 }], 0);
    await q.processAllAvailable();
    await q.stop();
    assert.equal((q.sink('out').rows().at(-1) as { total: number }).total, 115);
  });

  it('refuses to start from damaged or missing state files, naming the file', async () => {
    const dir = tempDir();
    const s: Scenario = {
      job: fixture('aggregations'),
      params: { case: 'per-card' },
      source: 'payments',
      sink: 'out',
      batches: [{ 0: [{ card: 'c', amount: 1, ts: 0 }] }, { 0: [{ card: 'c', amount: 2, ts: 0 }] }],
    };
    await restartedEachBatch(s, dir);
    const [operator] = readdirSync(join(dir, 'state'));
    const file = join(dir, 'state', operator!, '0', '2.changelog');
    const good = readFileSync(file);
    const start = () => startQuery(s.job, { params: s.params, clock: 'manual', checkpointLocation: dir });
    const damaged = Buffer.from(good);
    damaged[3] = damaged[3]! ^ 0xff;
    writeFileSync(file, damaged);
    await assert.rejects(start(), (e: Error) => {
      assert.equal((e as { code?: string }).code, 'CHECKPOINT_CORRUPT');
      assert.ok(e.message.includes(file), e.message);
      return true;
    });
    rmSync(file);
    await assert.rejects(start(), (e: Error) => {
      assert.equal((e as { code?: string }).code, 'CHECKPOINT_CORRUPT');
      assert.match(e.message, /2\.changelog is missing/);
      return true;
    });
    writeFileSync(file, good);
    const q = await start();
    await q.stop();
  });
});
