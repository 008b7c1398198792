import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { EpochLogs } from '../../src/checkpoint/epoch-logs.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { readMetadata } from '../../src/checkpoint/metadata.js';
import { type StartOptions, type StreamingQuery, startQuery } from '../../src/index.js';
import type { Order } from '../fixtures/jobs/evolution.js';

/**
 * Runs of the evolution fixture job (test/fixtures/jobs/evolution.ts) on one checkpoint, shared by
 * the query evolution tests: each run picks a version of the query by its params.
 */

export const job = new URL('../fixtures/jobs/evolution.js', import.meta.url);

export type Params = Record<string, string | number>;

const dirs: string[] = [];

/** A new temporary directory, removed by {@link removeTempDirs}. */
export function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'millrace-evolution-'));
  dirs.push(d);
  return d;
}

/** For `after()`: removes every directory {@link tempDir} made. */
export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

export const order = (id: string, amount = 1, card = 'c1'): Order => ({
  id,
  card,
  merchant: 'm1',
  amount,
  ts: 0,
});

export const ids = (rows: readonly unknown[]) => rows.map((r) => (r as Order).id);

/** Every file under `dir`, relative path → content: what "the checkpoint is untouched" compares. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      if (e.isDirectory()) walk(path);
      else out[relative(dir, path)] = readFileSync(path).toString('base64');
    }
  };
  walk(dir);
  return out;
}

export function start(
  dir: string,
  params: Params,
  extra: Partial<StartOptions> = {},
): Promise<StreamingQuery> {
  return startQuery(job, { checkpointLocation: dir, clock: 'manual', params, ...extra });
}

/** One run: adds `rows` to memory sources by name, waits until they are processed, stops. */
export async function runOnce(
  dir: string,
  params: Params,
  rows: Record<string, Order[]>,
  extra: Partial<StartOptions> = {},
): Promise<StreamingQuery> {
  const q = await start(dir, params, extra);
  try {
    for (const [name, list] of Object.entries(rows)) q.source<Order>(name).addData(list);
    await q.processAllAvailable();
  } finally {
    await q.stop();
  }
  return q;
}

/**
 * A start with `params` fails with CHECKPOINT_INCOMPATIBLE_CHANGE, its message naming the change
 * and the checkpoint, and every file of the checkpoint is as it was.
 */
export async function assertRefused(
  dir: string,
  params: Params,
  message: RegExp | string,
  extra: Partial<StartOptions> = {},
): Promise<void> {
  const before = snapshot(dir);
  await assert.rejects(start(dir, params, extra), (e: Error) => {
    assert.equal((e as { code?: string }).code, 'CHECKPOINT_INCOMPATIBLE_CHANGE', e.message);
    if (typeof message === 'string') assert.ok(e.message.includes(message), e.message);
    else assert.match(e.message, message);
    assert.ok(e.message.includes(dir), 'the message names the checkpoint');
    return true;
  });
  assert.deepEqual(snapshot(dir), before, 'the refused run left every checkpoint file as it was');
}

export const metadataOf = async (dir: string) => (await readMetadata(new CheckpointLayout(dir)))!;

export const logsOf = (dir: string) => new EpochLogs(new CheckpointLayout(dir));
