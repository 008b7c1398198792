import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type StreamingQuery, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const backlog = new URL('../fixtures/jobs/backlog.js', import.meta.url);
const tempDir = tempDirs('millrace-backlog');

type Params = Record<string, string | number>;

/** Moves the manual clock a second at a time up to `to`, each second's rows processed. */
async function drive(q: StreamingQuery, to: number): Promise<void> {
  for (let t = q.clock.now() + 1_000; t <= to; t += 1_000) {
    q.clock.set(t);
    await q.processAllAvailable();
  }
}

/** What the query wrote, one sorted line per row, and the rows it dropped as late. */
async function finish(q: StreamingQuery): Promise<{ out: string[]; late: number }> {
  await q.processAllAvailable();
  const out = q
    .sink('out')
    .rows()
    .map((r) => JSON.stringify(r))
    .sort();
  const late = q.lateRows().length;
  await q.stop();
  return { out, late };
}

/** A run with no stop, from the clock's 0 to `end`. */
async function uninterrupted(params: Params, end: number): Promise<{ out: string[]; late: number }> {
  const q = await startQuery(backlog, { clock: 'manual', clockStart: 0, params });
  await drive(q, end);
  return finish(q);
}

/**
 * A run stopped at `stopAt`, down for `downMs`, then started again on its checkpoint onto the
 * backlog the generator's schedule built meanwhile, and driven to `end`.
 */
async function restarted(
  params: Params,
  stopAt: number,
  downMs: number,
  end: number,
): Promise<{ out: string[]; late: number }> {
  const dir = tempDir();
  const first = await startQuery(backlog, {
    clock: 'manual',
    clockStart: 0,
    params,
    checkpointLocation: dir,
  });
  await drive(first, stopAt);
  const lateBefore = first.lateRows().length;
  await first.stop();
  const second = await startQuery(backlog, {
    clock: 'manual',
    clockStart: stopAt + downMs,
    params,
    checkpointLocation: dir,
    continueFrom: first,
  });
  await drive(second, end);
  const result = await finish(second);
  return { out: result.out, late: result.late + lateBefore };
}

describe('a restart onto a backlog (real-time mode)', () => {
  it('writes the windows a run without a stop writes, and drops no row as late', async () => {
    const params = { case: 'tumbling', rowsPerSecond: 200 };
    const expected = await uninterrupted(params, 40_000);
    assert.equal(expected.late, 0);
    assert.ok(expected.out.length >= 9, 'windows [0,10), [10,20) and [20,30) of three cards');
    const got = await restarted(params, 6_000, 20_000, 40_000);
    assert.equal(got.late, 0, 'no row of the backlog is late');
    assert.deepEqual(got.out, expected.out);
  });

  it('leaves no closed sliding window short of a row, reported late or not', async () => {
    const params = { case: 'sliding', rowsPerSecond: 200, delay: '3 seconds' };
    const expected = await uninterrupted(params, 36_000);
    const got = await restarted(params, 7_000, 20_000, 36_000);
    assert.equal(got.late, 0);
    assert.deepEqual(got.out, expected.out);
  });

  it('fires no event-time timer before every partition has passed its time', async () => {
    const params = { case: 'timers', rowsPerSecond: 200, partitions: 3 };
    const got = await restarted(params, 6_000, 20_000, 36_000);
    assert.deepEqual(got.out, [], 'no card is ever silent for 4 s');
    assert.equal(got.late, 0);
  });

  it('brings every window to the count of a run without a stop in update mode', async () => {
    const params = { case: 'tumbling', mode: 'update', rowsPerSecond: 200 };
    const expected = await uninterrupted(params, 40_000);
    const got = await restarted(params, 6_000, 20_000, 40_000);
    assert.equal(got.late, 0);
    assert.ok(expected.out.length > 9, 'windows are updated more than once');
    assert.deepEqual(lastUpdates(got.out), lastUpdates(expected.out));
  });

  it('closes session windows with every row of the backlog in them', async () => {
    const params = { case: 'sessions', rowsPerSecond: 200 };
    const expected = await uninterrupted(params, 36_000);
    assert.ok(expected.out.length >= 12, 'a session per card every 6 s');
    const got = await restarted(params, 7_000, 20_000, 36_000);
    assert.equal(got.late, 0);
    assert.deepEqual(got.out, expected.out);
  });

  it('feeds a chain of window aggregations every row of the backlog', async () => {
    const params = { case: 'chain', rowsPerSecond: 200 };
    const expected = await uninterrupted(params, 60_000);
    assert.ok(expected.out.length >= 2, 'windows [0,20) and [20,40)');
    const got = await restarted(params, 6_000, 20_000, 60_000);
    assert.equal(got.late, 0);
    assert.deepEqual(got.out, expected.out);
  });

  it("does the same for the rate source's partitions, run on one worker thread", async () => {
    const params = { case: 'tumbling', source: 'rate', rowsPerSecond: 200, partitions: 3, workers: 1 };
    const expected = await uninterrupted(params, 40_000);
    const got = await restarted(params, 6_000, 20_000, 40_000);
    assert.equal(got.late, 0);
    assert.deepEqual(got.out, expected.out);
  });
});

describe('a restart onto files that arrived while no run was going (the files source)', () => {
  /** File `i` holds 5 s of payments, 40 a second, from second 5 × i. */
  const writeFile = (dir: string, i: number) => {
    const lines: string[] = [];
    for (let k = 0; k < 200; k++) {
      const ts = i * 5_000 + k * 25;
      lines.push(JSON.stringify({ cardId: `c${k % 3}`, amount: (k % 7) + 1, ts }));
    }
    writeFileSync(join(dir, `.part-${i}.tmp`), `${lines.join('\n')}\n`);
    renameSync(join(dir, `.part-${i}.tmp`), join(dir, `part-${i}.jsonl`));
  };

  it('writes the windows one run over every file writes, and drops no row as late', async () => {
    const all = tempDir();
    for (let i = 0; i < 8; i++) writeFile(all, i);
    const expected = await finish(
      await startQuery(backlog, { clock: 'manual', params: { source: 'files', path: all } }),
    );
    assert.equal(expected.out.length, 9, 'windows [0,10), [10,20) and [20,30) of three cards');

    const path = tempDir();
    const checkpointLocation = tempDir();
    for (let i = 0; i < 2; i++) writeFile(path, i);
    const params = { source: 'files', path };
    const first = await startQuery(backlog, { clock: 'manual', params, checkpointLocation });
    await first.processAllAvailable();
    await first.stop();
    for (let i = 2; i < 8; i++) writeFile(path, i);
    const got = await finish(
      await startQuery(backlog, { clock: 'manual', params, checkpointLocation, continueFrom: first }),
    );
    assert.equal(got.late + first.lateRows().length, 0);
    assert.deepEqual(got.out, expected.out);
  });
});

for (const after of ['repartition', 'union']) {
  describe(`a restart onto a backlog with the watermark declared after a ${after} of sources`, () => {
    it('writes the windows a run without a stop writes, and drops no row as late', async () => {
      const params = { case: 'tumbling', after, rowsPerSecond: 200 };
      const expected = await uninterrupted(params, 40_000);
      assert.equal(expected.late, 0);
      const got = await restarted(params, 6_000, 20_000, 40_000);
      assert.equal(got.late, 0, 'no row of the backlog is late');
      assert.deepEqual(got.out, expected.out);
    });

    it('fires no event-time timer before every partition has passed its time', async () => {
      const params = { case: 'timers', after, rowsPerSecond: 200, partitions: 3 };
      const got = await restarted(params, 6_000, 20_000, 36_000);
      assert.deepEqual(got.out, [], 'no card is ever silent for 4 s');
      assert.equal(got.late, 0);
    });
  });
}

/** Update mode: the last update of each window and card (its counts only grow). */
function lastUpdates(lines: readonly string[]): string[] {
  const last = new Map<string, { n: number; line: string }>();
  for (const line of lines) {
    const row = JSON.parse(line) as { window: unknown; cardId: string; n: number };
    const key = JSON.stringify([row.window, row.cardId]);
    if ((last.get(key)?.n ?? -1) < row.n) last.set(key, { n: row.n, line });
  }
  return [...last.values()].map((v) => v.line).sort();
}
