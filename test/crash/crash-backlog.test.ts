import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readFilesSinkOutput } from '../../src/index.js';
import { pause, runAndKill, runToEnd } from './harness.js';

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('../fixtures/jobs/backlog.js', import.meta.url));

/** Payments made per second of event time, over both partitions (a millisecond apart in each). */
const RATE = 2_000;
/** How long each killed run stays down before the next starts. */
const DOWNTIME_MS = 2_000;

/** Rows written to the late-row files of `dir`. */
function lateRows(dir: string): number {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const f of readdirSync(dir)) {
    n += readFileSync(join(dir, f), 'utf8')
      .split('\n')
      .filter((l) => l !== '').length;
  }
  return n;
}

describe('a job killed with SIGKILL and restarted onto the backlog its generator built meanwhile', () => {
  it('closes every window with all of its rows, none late (real-time mode, 2 kills)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'millrace-crash-backlog-'));
    const checkpoint = join(root, 'checkpoint');
    const output = join(root, 'output');
    const late = join(root, 'late');
    const children = new Set<ChildProcess>();
    // The watermark trails by 1 s and each run is down for 2 s (and starting takes longer still):
    // each restart reads a backlog whose partitions, read unevenly, would make each other's rows
    // late. Once caught up, the partitions keep within the delay of each other.
    const args = (extra: string[] = []) => [
      BIN,
      'run',
      JOB,
      '--checkpoint',
      checkpoint,
      '--late-rows',
      late,
      ...['-p', 'case=tumbling', '-p', `rowsPerSecond=${RATE}`, '-p', 'partitions=2'],
      ...['-p', 'delay=1 second', '-p', 'size=1 second', '-p', 'checkpointInterval=300 milliseconds'],
      ...['-p', `out=${output}`],
      ...extra,
    ];
    try {
      // Each run is killed soon after its first commit (runAndKill's draw below one half), so the
      // generator's schedule is in the checkpoint and the next run finds the backlog it built.
      const rng = () => 0.3;
      for (let kill = 0; kill < 2; kill++) {
        const run = await runAndKill(args(), { checkpoint, rng, maxRunMs: 1500, children });
        assert.equal(run.error, undefined);
        await pause(DOWNTIME_MS); // the downtime the backlog builds up in, not a wait for anything
      }
      const last = await runToEnd(args(['--duration', '5s']), 60_000, children);
      assert.equal(last.error, undefined);

      const perWindow = new Map<number, number>();
      for (const r of (await readFilesSinkOutput(output)) as { window: { start: number }; n: number }[]) {
        perWindow.set(r.window.start, (perWindow.get(r.window.start) ?? 0) + r.n);
      }
      const starts = [...perWindow.keys()].sort((a, b) => a - b);
      assert.ok(starts.length >= 3, `windows written: ${starts.length}`);
      // The first window began before the generator's first row: the rest are whole.
      for (const start of starts.slice(1)) {
        assert.equal(perWindow.get(start), RATE, `the window at ${start} holds every payment of its second`);
      }
      assert.deepEqual(
        starts.slice(1).map((s, i) => s - starts[i]!),
        starts.slice(1).map(() => 1_000),
        'no window is missing',
      );
      assert.equal(lateRows(late), 0, 'no row is late');
    } finally {
      for (const c of children) c.kill('SIGKILL');
      rmSync(root, { recursive: true, force: true });
    }
  });
});
