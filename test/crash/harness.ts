import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EpochLogs } from '../../src/checkpoint/epoch-logs.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { readFilesSinkOutput } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/crash.js';

/** The crash tests' seed: it fixes the kill moments and input files (`MILLRACE_CRASH_SEED` replays one). */
export const CRASH_SEED = Number(process.env.MILLRACE_CRASH_SEED ?? 20261129);

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('../fixtures/jobs/crash.js', import.meta.url));

export interface CrashTestOptions {
  /** How many runs are killed with SIGKILL before the last one runs to the end. */
  readonly kills: number;
  readonly trigger: 'realTime' | 'processingTime';
  /**
   * `windows`: a windowed count in append mode (stateful); `rows`: events passed through; `state`:
   * a running total per key in transformWithState; `generated`: a rate source's rows (no input
   * files: what is expected is every row up to the offsets the last run committed); `arrow`: events
   * with a column an Arrow UDF computes on the task's thread, in batches of up to 16 rows.
   */
  readonly query: 'windows' | 'rows' | 'state' | 'generated' | 'arrow';
  /** `arrow` only: the UDF runs on a UDF thread (`isolateUdfs`) instead of the task's. */
  readonly isolate?: boolean;
  /** Seeds the kill moments (the same seed, the same schedule of kills and files). */
  readonly seed: number;
  /** Input files written over the killed runs, and rows in each. */
  readonly files: number;
  readonly rowsPerFile: number;
  /** A run is killed at a random moment in `[0, maxRunMs)` after it was started. */
  readonly maxRunMs: number;
  /** How long the last run may take to finish. */
  readonly finalTimeoutMs?: number;
  readonly log?: (line: string) => void;
  /** Leaves the input, output and checkpoint directories behind (their path is logged). */
  readonly keep?: boolean;
}

export interface CrashTestResult {
  readonly kills: number;
  /** Runs that ended before their kill (a crash test fails on these; see `errors`). */
  readonly errors: string[];
  readonly expectedRows: number;
  readonly outputRows: number;
  /** Rows expected and missing, rows written more often than expected, rows not expected at all. */
  readonly missing: string[];
  readonly duplicated: string[];
  readonly unexpected: string[];
}

/** The i-th event of the input: keys and values cycle, event time grows 13 ms a row (none late). */
export function event(i: number): Event {
  return { k: `k${i % 5}`, ts: 1_000_000 + i * 13, v: (i * 7) % 11 };
}

/** Mulberry32: a small seeded generator, so a failing schedule can be replayed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** JSON with sorted keys, so rows compare whatever order their fields were written in. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

export function counts(rows: readonly unknown[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of rows) {
    const k = canonical(r);
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}

/** What the query must have written, computed in one pass over every event. */
function expected(query: CrashTestOptions['query'], events: readonly Event[]): unknown[] {
  if (query === 'rows') return [...events];
  if (query === 'arrow') return events.map((e) => ({ ...e, double: e.v * 2 }));
  if (query === 'state') {
    // Each key's running count and sum, one row per event (the events come in order).
    const running = new Map<string, { n: number; total: number }>();
    return events.map((e) => {
      const r = running.get(e.k) ?? { n: 0, total: 0 };
      r.n++;
      r.total += e.v;
      running.set(e.k, r);
      return { k: e.k, n: r.n, total: r.total };
    });
  }
  const groups = new Map<
    string,
    { k: string; window: { start: number; end: number }; n: number; total: number }
  >();
  for (const e of events) {
    const start = Math.floor(e.ts / 1000) * 1000;
    const id = `${e.k}@${start}`;
    let g = groups.get(id);
    if (g === undefined) {
      g = { k: e.k, window: { start, end: start + 1000 }, n: 0, total: 0 };
      groups.set(id, g);
    }
    g.n++;
    g.total += e.v;
  }
  return [...groups.values()];
}

/** A rate source's rows `{ value }` before `ends[p]` in each partition p (value = offset × 2 + p). */
function generatedRows(ends: readonly number[]): unknown[] {
  const rows: unknown[] = [];
  for (const [p, end] of ends.entries()) for (let o = 0; o < end; o++) rows.push({ value: o * 2 + p });
  return rows;
}

/** The offsets (source 0, per partition) of the checkpoint's last committed epoch. */
async function committedOffsets(checkpoint: string): Promise<number[]> {
  const logs = new EpochLogs(new CheckpointLayout(checkpoint));
  const epoch = commits(checkpoint);
  const entry = epoch < 0 ? undefined : await logs.readOffsets(epoch);
  const offsets = entry?.sources[0]?.offsets ?? {};
  return [offsets[0] ?? 0, offsets[1] ?? 0];
}

/**
 * Runs the crash job in a child process (`millrace run <job> --checkpoint dir`) and kills it with
 * SIGKILL at random moments, `kills` times, adding input files as it goes; then runs it once more
 * with `availableNow` to the end and compares the output, read through the files sink's manifests,
 * with the expected result: as a set, and in counts.
 */
export async function crashTest(options: CrashTestOptions): Promise<CrashTestResult> {
  const log = options.log ?? (() => {});
  const rng = random(options.seed);
  const root = mkdtempSync(join(tmpdir(), 'millrace-crash-'));
  const input = join(root, 'input');
  const output = join(root, 'output');
  const checkpoint = join(root, 'checkpoint');
  mkdirSync(input);
  const events: Event[] = [];
  let written = 0;
  const writeFile = (name: string, rows: Event[]) => {
    const temp = join(input, `.${name}.tmp`);
    writeFileSync(temp, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    renameSync(temp, join(input, name));
  };
  const addFiles = (upTo: number) => {
    if (options.query === 'generated') return;
    for (; written < Math.min(upTo, options.files); written++) {
      const rows = Array.from({ length: options.rowsPerFile }, (_, j) =>
        event(written * options.rowsPerFile + j),
      );
      events.push(...rows);
      writeFile(`events-${String(written).padStart(5, '0')}.jsonl`, rows);
    }
  };
  const args = (trigger: string) => [
    BIN,
    'run',
    JOB,
    '--checkpoint',
    checkpoint,
    '--progress',
    'json',
    '-p',
    `input=${input}`,
    '-p',
    `output=${output}`,
    '-p',
    `trigger=${trigger}`,
    '-p',
    `case=${options.query}`,
    ...(options.isolate === true ? ['-p', 'isolate=true'] : []),
  ];
  const errors: string[] = [];
  const children = new Set<ChildProcess>();
  try {
    const perRun = Math.ceil(options.files / Math.max(1, options.kills));
    for (let run = 0; run < options.kills; run++) {
      addFiles((run + 1) * perRun);
      const { error, when } = await runAndKill(args(options.trigger), {
        checkpoint,
        rng,
        maxRunMs: options.maxRunMs,
        children,
      });
      if (error !== undefined) errors.push(`run ${run} ${error}`);
      log(`run ${run}: killed ${when}; ${written} files in, newest committed epoch ${commits(checkpoint)}`);
    }
    addFiles(options.files);
    if (options.query === 'windows') {
      // One event far ahead moves the watermark past every window of the events before it.
      writeFile('events-99999.jsonl', [{ k: 'end', ts: 1_000_000 + events.length * 13 + 3_600_000, v: 0 }]);
    }
    const last = await runToEnd(args('availableNow'), options.finalTimeoutMs ?? 60_000, children);
    if (last.error !== undefined) errors.push(`the last run ${last.error}`);
    log(`last run: exit ${last.exit}`);

    const want = counts(
      options.query === 'generated'
        ? generatedRows(await committedOffsets(checkpoint))
        : expected(options.query, events),
    );
    if (options.keep)
      log(`manifests before read: ${readdirSync(join(output, '_manifest')).sort().join(' ')}`);
    const got = counts(await readFilesSinkOutput(output));
    if (options.keep) {
      log(`manifests at read: ${readdirSync(join(output, '_manifest')).sort().join(' ')}`);
      log(`files at read: ${readdirSync(output).sort().join(' ')}`);
    }
    return { kills: options.kills, errors, ...compareCounts(want, got) };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    if (options.keep) log(`kept ${root}`);
    else rmSync(root, { recursive: true, force: true });
  }
}

/**
 * Runs `node <args>` in a child process and kills it with SIGKILL: half the runs at a random
 * moment in `[0, maxRunMs)` after their start (starting, recovering, running), the other half
 * soon after they committed an epoch of their own, so that every kill point of a running query is
 * reached. `duringRun` runs once the run is up (after that commit). A run that ends before its
 * kill is an error (its standard error is in the message).
 */
export async function runAndKill(
  args: string[],
  o: {
    checkpoint: string;
    rng: () => number;
    maxRunMs: number;
    children: Set<ChildProcess>;
    duringRun?: () => Promise<void>;
  },
): Promise<{ error?: string; when: string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  o.children.add(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = once(child, 'exit');
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  const afterCommit = o.rng() < 0.5;
  const delay = Math.floor(o.rng() * (afterCommit ? o.maxRunMs / 3 : o.maxRunMs));
  let stalled = false;
  if (afterCommit) {
    const before = commits(o.checkpoint);
    const deadline = Date.now() + 30_000;
    while (!ended && commits(o.checkpoint) <= before && Date.now() < deadline) await pause(10);
    stalled = !ended && commits(o.checkpoint) <= before;
  }
  await o.duringRun?.();
  const early = await Promise.race([exited.then(() => true), pause(delay).then(() => ended)]);
  let error: string | undefined;
  if (early) {
    error = `ended by itself (exit ${child.exitCode}) before its kill: ${stderr.trim()}`;
  } else {
    // A running query that commits nothing for 30 s is stuck (a sink that never makes progress).
    if (stalled) error = `committed no epoch within 30 s: ${stderr.trim()}`;
    child.kill('SIGKILL');
    await exited;
  }
  o.children.delete(child);
  return { error, when: afterCommit ? `${delay} ms after a commit` : `${delay} ms after its start` };
}

/**
 * Runs `node <args>` to its end (killed after `timeoutMs`); an exit status other than 0 is an
 * error. With `until`, the run is asked to stop (SIGTERM: a graceful stop) once `until` resolves.
 */
export async function runToEnd(
  args: string[],
  timeoutMs: number,
  children: Set<ChildProcess>,
  until?: () => Promise<void>,
): Promise<{ exit: number | string; error?: string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  let stopped = false;
  void until?.().then(() => {
    stopped = true;
    child.kill('SIGTERM');
  });
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  clearTimeout(timer);
  children.delete(child);
  const exit = code ?? signal ?? 'unknown';
  // A run asked to stop before it had started its query ends by the signal itself.
  const ok = code === 0 || (stopped && signal === 'SIGTERM');
  return ok ? { exit } : { exit, error: `ended with exit ${exit}: ${stderr.trim()}` };
}

/** What a crash test's output holds against what it should: rows missing, written too often, never expected. */
export function compareCounts(
  want: Map<string, number>,
  got: Map<string, number>,
): Omit<CrashTestResult, 'kills' | 'errors'> {
  const missing: string[] = [];
  const duplicated: string[] = [];
  const unexpected: string[] = [];
  for (const [row, n] of want) {
    const m = got.get(row) ?? 0;
    if (m < n) missing.push(row);
    else if (m > n) duplicated.push(`${row} ×${m}`);
  }
  for (const row of got.keys()) if (!want.has(row)) unexpected.push(row);
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  return { expectedRows: sum(want), outputRows: sum(got), missing, duplicated, unexpected };
}

/** The newest committed epoch of a checkpoint (−1: none). */
export function commits(checkpoint: string): number {
  const dir = join(checkpoint, 'commits');
  if (!existsSync(dir)) return -1;
  return Math.max(
    -1,
    ...readdirSync(dir)
      .filter((n) => /^\d+$/.test(n))
      .map(Number),
  );
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs a crash test and asserts the output is exactly the expected one: nothing lost, nothing twice. */
export async function expectExactlyOnce(options: CrashTestOptions): Promise<void> {
  const lines: string[] = [];
  const result = await crashTest({ ...options, log: (l) => lines.push(l) });
  const context = `seed ${options.seed}\n${lines.join('\n')}`;
  assert.deepEqual(result.errors, [], context);
  assert.deepEqual(result.missing.slice(0, 10), [], `rows lost (${result.missing.length}); ${context}`);
  assert.deepEqual(
    result.duplicated.slice(0, 10),
    [],
    `rows written twice (${result.duplicated.length}); ${context}`,
  );
  assert.deepEqual(result.unexpected.slice(0, 10), [], `rows never expected; ${context}`);
  assert.equal(result.outputRows, result.expectedRows);
}
