import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readFilesSinkOutput, startQuery } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/crash.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

/**
 * A real-time epoch commits in three steps: its offsets, the sink's own commit (a files sink's
 * manifest), its commit file. A run that dies between the last two leaves an epoch the sink holds
 * and the checkpoint does not. Redoing it is not the same epoch again: the redo, in real-time mode
 * or as a micro-batch, closes windows at other points than the committed output did. The restart
 * finishes the commit instead.
 */

const job = new URL('../fixtures/jobs/crash.js', import.meta.url);
const tempDir = tempDirs('millrace-finish-commit');

const EVENTS = 1200;
/** Five keys; event time 13 ms apart: 16 one-second windows, none late. */
const event = (i: number): Event => ({ k: `k${i % 5}`, ts: 1_000_000 + i * 13, v: (i * 7) % 11 });

interface Place {
  readonly input: string;
  readonly output: string;
  readonly checkpoint: string;
}

function place(): Place {
  const root = tempDir();
  const p = { input: join(root, 'in'), output: join(root, 'out'), checkpoint: join(root, 'checkpoint') };
  mkdirSync(p.input);
  const lines = Array.from({ length: EVENTS }, (_, i) => `${JSON.stringify(event(i))}\n`);
  writeFileSync(join(p.input, 'events-0.jsonl'), lines.join(''));
  return p;
}

async function run(p: Place, trigger: 'realTime' | 'availableNow'): Promise<void> {
  const q = await startQuery(job, {
    params: { input: p.input, output: p.output, trigger, case: 'windows' },
    checkpointLocation: p.checkpoint,
  });
  if (trigger === 'availableNow') {
    await q.awaitTermination(60_000);
    return;
  }
  await q.processAllAvailable();
  await q.stop();
}

const numbered = (dir: string): number[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => /^\d+$/.test(n))
        .map(Number)
        .sort((a, b) => a - b)
    : [];

/**
 * Puts the checkpoint and the output back as a run that died right after the sink committed the
 * last epoch that wrote windows leaves them: that epoch's commit file gone, nothing after it.
 * With `sinkCommitted: false`, its manifest is gone too (the run died before the sink's commit).
 * Returns the epoch.
 */
function dieAfterSinkCommit(p: Place, sinkCommitted: boolean): number {
  const manifests = join(p.output, '_manifest');
  const commits = numbered(join(p.checkpoint, 'commits'));
  const epoch = Math.max(
    ...numbered(manifests).filter(
      (e) => commits.includes(e) && readFileSync(join(manifests, String(e)), 'utf8').includes('.json'),
    ),
  );
  assert.ok(Number.isFinite(epoch), 'the first run committed an epoch that wrote windows');
  for (const e of commits) if (e >= epoch) rmSync(join(p.checkpoint, 'commits', String(e)));
  for (const e of numbered(join(p.checkpoint, 'offsets'))) {
    if (e > epoch) rmSync(join(p.checkpoint, 'offsets', String(e)));
  }
  for (const e of numbered(manifests)) {
    if (e > epoch || (e === epoch && !sinkCommitted)) rmSync(join(manifests, String(e)));
  }
  return epoch;
}

/** Every window of the events, one row each, with the count and the sum a single pass finds. */
function expectedWindows(): Map<string, { n: number; total: number }> {
  const m = new Map<string, { n: number; total: number }>();
  for (let i = 0; i < EVENTS; i++) {
    const e = event(i);
    const id = `${e.k}@${Math.floor(e.ts / 1000) * 1000}`;
    const w = m.get(id) ?? { n: 0, total: 0 };
    w.n++;
    w.total += e.v;
    m.set(id, w);
  }
  return m;
}

type WindowRow = { k: string; window: { start: number }; n: number; total: number };

/** The output's windows (the closing event's own window left out), and those written more than once. */
async function windowsOf(
  p: Place,
): Promise<{ got: Map<string, { n: number; total: number }>; twice: string[] }> {
  const got = new Map<string, { n: number; total: number }>();
  const twice: string[] = [];
  for (const r of (await readFilesSinkOutput(p.output)) as WindowRow[]) {
    if (r.k === 'end') continue;
    const id = `${r.k}@${r.window.start}`;
    if (got.has(id)) twice.push(id);
    got.set(id, { n: r.n, total: r.total });
  }
  return { got, twice };
}

/** One event an hour ahead closes every window before it. */
function closeEveryWindow(p: Place): void {
  const end = { k: 'end', ts: 1_000_000 + EVENTS * 13 + 3_600_000, v: 0 };
  writeFileSync(join(p.input, 'events-1.jsonl'), `${JSON.stringify(end)}\n`);
}

describe('a restart after the sink committed an epoch and the checkpoint did not', () => {
  for (const trigger of ['availableNow', 'realTime'] as const) {
    it(`finishes that epoch's commit, and the restart (${trigger}) writes every window exactly once`, async () => {
      const p = place();
      await run(p, 'realTime');
      const epoch = dieAfterSinkCommit(p, true);
      closeEveryWindow(p);
      await run(p, trigger);
      const { got, twice } = await windowsOf(p);
      assert.deepEqual(twice, [], 'no window is written twice');
      assert.deepEqual(got, expectedWindows());
      assert.ok(existsSync(join(p.checkpoint, 'commits', String(epoch))), `commits/${epoch} is written`);
    });
  }

  it('redoes the epoch when the sink had not committed it, and writes every window exactly once', async () => {
    const p = place();
    await run(p, 'realTime');
    dieAfterSinkCommit(p, false);
    closeEveryWindow(p);
    await run(p, 'availableNow');
    const { got, twice } = await windowsOf(p);
    assert.deepEqual(twice, []);
    assert.deepEqual(got, expectedWindows());
  });
});
