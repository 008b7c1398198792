import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type StreamingQuery, startQuery } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/keyed-windows.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/keyed-windows.js', import.meta.url);
const dedupJob = new URL('../fixtures/jobs/dedup.js', import.meta.url);
const joinJob = new URL('../fixtures/jobs/joins.js', import.meta.url);
const tempDir = tempDirs('millrace-backlog-property');
const DELAY = 2_000;
const SIZE = 10_000;
const PARTITIONS = 3;

/**
 * Each partition's rows arrive in event-time order at a speed of its own (a row every `gap` ms),
 * over the same stretch of time: a partition with a small gap has a longer backlog after a stop.
 */
const partitionArb = fc.record({
  gap: fc.integer({ min: 50, max: 2_000 }),
  keys: fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 5 }),
});
const caseArb = fc.record({
  partitions: fc.array(partitionArb, { minLength: PARTITIONS, maxLength: PARTITIONS }),
  /** Event time at which the first run stops (every partition has made the rows up to it). */
  stopAt: fc.integer({ min: 1_000, max: 30_000 }),
  end: fc.integer({ min: 40_000, max: 90_000 }),
});

type Case = typeof caseArb extends fc.Arbitrary<infer C> ? C : never;

/** Partition p's rows made after event time `after`, by `until`. */
function rowsOf(c: Case, p: number, after: number, until: number): Event[] {
  const { gap, keys } = c.partitions[p]!;
  const out: Event[] = [];
  for (let i = 0, ts = gap; ts <= until; i++, ts += gap) {
    if (ts > after) out.push({ key: keys[i % keys.length]!, v: p + 1, ts });
  }
  return out;
}

const byPartition = (c: Case, after: number, until: number): Record<number, Event[]> =>
  Object.fromEntries(Array.from({ length: PARTITIONS }, (_, p) => [p, rowsOf(c, p, after, until)]));

/**
 * What a run without a stop writes: in-order partitions make no row late, so every window closed by
 * the last watermark (the largest event time − the delay) with every row of it.
 */
function model(c: Case): string[] {
  const rows = Object.values(byPartition(c, 0, c.end)).flat();
  const closedBy = Math.max(...rows.map((r) => r.ts)) - DELAY;
  const counts = new Map<string, { n: number; s: number }>();
  for (const r of rows) {
    const start = Math.floor(r.ts / SIZE) * SIZE;
    if (start + SIZE > closedBy) continue;
    const k = `${r.key} ${start}`;
    const g = counts.get(k) ?? { n: 0, s: 0 };
    g.n++;
    g.s += r.v;
    counts.set(k, g);
  }
  return [...counts.entries()].map(([k, g]) => `${k} ${g.n} ${g.s}`).sort();
}

type Inputs = Record<string, Record<number, unknown[]>>;

/**
 * Runs `url` on the rows its sources' partitions made by the stop, stops it, then starts it again
 * on its checkpoint onto the rest as a backlog; returns what `read` makes of the second run's sink
 * (which holds the first run's output too). Neither run may drop a row as late.
 */
async function restartOnto(
  url: URL,
  params: Record<string, string | number>,
  inputs: (after: number, until: number) => Inputs,
  c: Case,
  read: (q: StreamingQuery) => string[],
): Promise<string[]> {
  const dir = tempDir();
  const first = await startQuery(url, {
    params,
    clock: 'manual',
    checkpointLocation: dir,
    initialData: inputs(0, c.stopAt),
  });
  await first.processAllAvailable();
  assert.deepEqual(first.lateRows(), []);
  await first.stop();
  const second = await startQuery(url, {
    params,
    clock: 'manual',
    checkpointLocation: dir,
    // The first run's rows come with it; these are what the partitions made while it was down.
    continueFrom: first,
    initialData: inputs(c.stopAt, c.end),
  });
  try {
    await second.processAllAvailable();
    assert.deepEqual(second.lateRows(), []);
    return read(second);
  } finally {
    await second.stop();
  }
}

/** Rows of every partition, reshaped by `shape` (the partition and a row made at `ts`). */
const reshaped =
  <R>(c: Case, shape: (p: string, r: Event) => R[], partitions = PARTITIONS) =>
  (after: number, until: number): Record<number, R[]> =>
    Object.fromEntries(
      Object.entries(byPartition(c, after, until))
        .filter(([p]) => Number(p) < partitions)
        .map(([p, list]) => [p, list.flatMap((r) => shape(p, r))]),
    );

describe('restarts onto backlogs of random lengths and partition speeds (property)', () => {
  it('write what a run without a stop writes, and drop no row as late: windowed counts', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const params = { delay: DELAY, sourcePartitions: PARTITIONS, mode: 'append' };
        const got = await restartOnto(
          job,
          params,
          (after, until) => ({ events: byPartition(c, after, until) }),
          c,
          (q) =>
            (q.sink('out').rows() as { key: string; window: { start: number }; n: number; s: number }[])
              .map((r) => `${r.key} ${r.window.start} ${r.n} ${r.s}`)
              .sort(),
        );
        assert.deepEqual(got, model(c));
      }),
      { numRuns: 6, seed: 20261207 },
    );
  });

  it('write what a run without a stop writes, and drop no row as late: dropDuplicatesWithinWatermark', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        // Every payment comes twice in a row; the output is each one once. (Two partitions, a 10-s delay.)
        const txs = reshaped(
          c,
          (p, r) => {
            const tx = { txId: `${p}-${r.ts}`, ts: r.ts };
            return [tx, tx];
          },
          2,
        );
        const got = await restartOnto(
          dedupJob,
          { case: 'within' },
          (after, until) => ({ txs: txs(after, until) }),
          c,
          (q) => (q.sink('out').rows() as { txId: string }[]).map((r) => r.txId).sort(),
        );
        const want = Object.values(txs(0, c.end))
          .flat()
          .map((r) => r.txId);
        assert.deepEqual(got, [...new Set(want)].sort());
      }),
      { numRuns: 5, seed: 20261207 },
    );
  });

  it('write what a run without a stop writes, and drop no row as late: a stream–stream join', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        // Impression i of partition p is clicked 500 ms later, on the same partition of the clicks:
        // with nothing late, every impression meets its click (range −1 s … 3 s, delay 2 s).
        const impressions = reshaped(c, (p, r) => [{ k: `${p}-${r.ts}`, lt: r.ts, lv: 1 }]);
        const clicks = reshaped(c, (p, r) => [{ k: `${p}-${r.ts}`, rt: r.ts + 500, rv: 2 }]);
        const got = await restartOnto(
          joinJob,
          { case: 'stream', sourcePartitions: PARTITIONS },
          (after, until) => ({ impressions: impressions(after, until), clicks: clicks(after, until) }),
          c,
          (q) =>
            (q.sink('out').rows() as { k: string; lt: number; rt: number }[])
              .map((r) => `${r.k} ${r.rt - r.lt}`)
              .sort(),
        );
        const want = Object.values(impressions(0, c.end))
          .flat()
          .map((r) => `${r.k} 500`)
          .sort();
        assert.deepEqual(got, want);
      }),
      { numRuns: 5, seed: 20261207 },
    );
  });
});
