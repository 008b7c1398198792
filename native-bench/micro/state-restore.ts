/**
 * Restore of one aggregation partition's checkpointed state, as a restarted task does it: the
 * windowed count of `millrace bench checkpoint` (a count per card and 1-s window), built through
 * the engine's own operator and checkpointer, then restored in a fresh worker thread (one per
 * partition, as the engine runs them), timed by phase and by the thread's CPU.
 *
 *   node dist/native-bench/micro/state-restore.js [--groups N] [--changelogs N] [--runs N]
 *       [--workers N] [--young-mb N] [--dir DIR] [--keep] [--lazy]
 *
 * `--lazy` restores as a real-time task does: the files are read and checked, the task is ready,
 * and the key groups are loaded afterwards (timed apart: here all at once, in a running query a
 * group when a row needs it and the rest between rows).
 *
 * Defaults: 500 000 groups (one of the two partitions of C1's ≈ 1 M), a snapshot then 6 changelogs
 * of ≈ 95 000 / 2 groups written and as many evicted each (the shape of E3's files).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { StateCheckpointer } from '../../src/checkpoint/state-checkpointer.js';
import type { AggregateOperator } from '../../src/operators/aggregate.js';
import { countPerCardAndSecond } from './aggregate-alone.js';

/** The windowed count's aggregation, alone: rows are pushed and watermarks given by hand. */
function operator(): AggregateOperator {
  // No row is late: windows are evicted by onWatermark, called directly.
  return countPerCardAndSecond({ delay: '10 seconds', mode: 'update', out: { push: () => {} } })[0]!;
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : Number(process.argv[i + 1]);
}

const MIN_DELTAS = 1000;

async function build(dir: string, groups: number, changelogs: number): Promise<number> {
  const op = operator();
  const perWindow = Math.round(groups / 11);
  let durable = 0;
  const cp = new StateCheckpointer(op.store, dir, 0, 0, MIN_DELTAS, {
    durable: () => durable++,
    failed: (e) => {
      throw e;
    },
  });
  let card = 0;
  // Event times as a live query has them (ms since the epoch: not small integers).
  const t0 = 1_764_000_000_000;
  const fill = (second: number) => {
    for (let i = 0; i < perWindow; i++)
      op.push({ cardId: `card-${(card++ * 2654435761) % 1_000_000}`, ts: t0 + second * 1000 + (i % 1000) });
  };
  // The checkpointer encodes in slices between turns of the event loop, as in a running task.
  const epochEnded = async (epoch: number) => {
    const before = durable;
    cp.epochEnded(epoch);
    while (durable === before) await new Promise((r) => setImmediate(r));
  };
  let second = 0;
  for (; second < 11; second++) fill(second);
  // The snapshot: version MIN_DELTAS.
  await epochEnded(MIN_DELTAS - 1);
  for (let c = 0; c < changelogs; c++, second++) {
    fill(second);
    op.onWatermark(t0 + (second - 10) * 1000 - 1);
    await epochEnded(MIN_DELTAS + c);
  }
  return MIN_DELTAS + changelogs;
}

interface Result {
  readMs: number;
  restoredMs: number;
  /** `--lazy`: loading every key group after the task was ready. */
  loadMs: number;
  cpuMs: number;
  groups: number;
}

function restoreInWorker(dir: string, version: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { dir, version, lazy: process.argv.includes('--lazy') },
      execArgv: process.execArgv,
    });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

async function main(): Promise<void> {
  const groups = arg('groups', 500_000);
  const changelogs = arg('changelogs', 6);
  const runs = arg('runs', 3);
  const workers = arg('workers', 1);
  const given = process.argv.indexOf('--dir');
  const dir = given < 0 ? mkdtempSync(join(tmpdir(), 'millrace-restore-')) : process.argv[given + 1]!;
  let version: number;
  const stateDir = join(dir, 'state', '0', '0');
  let files: string[] = [];
  try {
    files = readdirSync(stateDir);
  } catch {}
  if (files.length > 0) {
    version = Math.max(...files.map((f) => Number.parseInt(f, 10)));
  } else {
    const t = performance.now();
    version = await build(dir, groups, changelogs);
    console.log(`built in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    files = readdirSync(stateDir);
  }
  const bytes = files.reduce((s, f) => s + statSync(join(stateDir, f)).size, 0);
  console.log(`${files.length} files, ${(bytes / 2 ** 20).toFixed(1)} MiB, version ${version}`);
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    const results = await Promise.all(Array.from({ length: workers }, () => restoreInWorker(dir, version)));
    const wall = performance.now() - t;
    for (const res of results) {
      console.log(
        `run ${r + 1}: ${res.groups} groups; read+decode ${res.readMs.toFixed(0)} ms, index ${res.restoredMs.toFixed(0)} ms, ` +
          `${res.loadMs > 0 ? `then loading the key groups ${res.loadMs.toFixed(0)} ms, ` : ''}` +
          `thread CPU ${res.cpuMs.toFixed(0)} ms; wall with worker start ${wall.toFixed(0)} ms`,
      );
    }
  }
  if (given < 0 && !process.argv.includes('--keep')) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
}

function restoreHere(): void {
  const { dir, version, lazy } = workerData as { dir: string; version: number; lazy: boolean };
  const op = operator();
  const cp = new StateCheckpointer(op.store, dir, 0, 0, MIN_DELTAS, { durable: () => {}, failed: () => {} });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  cp.restore(version, lazy);
  const t1 = performance.now();
  op.restored();
  const t2 = performance.now();
  op.table!.loadAll();
  const t3 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  parentPort!.postMessage({
    readMs: t1 - t0,
    restoredMs: t2 - t1,
    loadMs: t3 - t2,
    cpuMs: (cpu.user + cpu.system) / 1000,
    groups: op.table!.size,
  } satisfies Result);
}

if (isMainThread) await main();
else restoreHere();
