import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { before, describe, it } from 'node:test';
import type { CheckpointProblem } from '../../src/checkpoint/inspect.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { readMetadata } from '../../src/checkpoint/metadata.js';
import { verifyCheckpoint } from '../../src/checkpoint/verify.js';
import { readFilesSinkOutput, startQuery } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/damage.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { snapshot } from './evolution-harness.js';

/**
 * The corruption campaign: a real checkpoint — a files source and a generator, a windowed count,
 * a files sink — damaged one way at a time (each kind of file deleted, truncated, a byte flipped),
 * then restarted. A restart either refuses with CHECKPOINT_CORRUPT naming the damaged file, leaving
 * the checkpoint and the output as they were, or — only where the damage is harmless by design —
 * resumes with exactly the output of an undamaged restart. `verifyCheckpoint` agrees: a problem is
 * reported if and only if the restart refuses.
 */

const job = new URL('../fixtures/jobs/damage.js', import.meta.url);
const tempDir = tempDirs('millrace-damage');

/** The directories of one copy: the metadata records the sink's path, so copies share these. */
interface Place {
  readonly input: string;
  readonly output: string;
  readonly checkpoint: string;
}
const placeIn = (root: string): Place => ({
  input: join(root, 'in'),
  output: join(root, 'out'),
  checkpoint: join(root, 'checkpoint'),
});

const events = (from: number, n: number): Event[] =>
  Array.from({ length: n }, (_, i) => ({ k: `k${i % 3}`, ts: (from + i) * 250, v: i }));
/** Input file `n`: 8 events, but for the second run's 4 (see the listing in `before`). */
const writeInput = (place: Place, n: number) =>
  writeFileSync(
    join(place.input, `in-${n}.jsonl`),
    events(n * 8, n === 1 ? 4 : 8)
      .map((e) => `${JSON.stringify(e)}\n`)
      .join(''),
  );

/** A run over what the input holds, on the query's clock from `clockStart` (the generator's rows). */
async function run(place: Place, clockStart: number): Promise<void> {
  const q = await startQuery(job, {
    params: { input: place.input, output: place.output },
    checkpointLocation: place.checkpoint,
    clock: 'manual',
    clockStart,
  });
  await q.awaitTermination(60_000);
}

/** What the campaign's restart does: a new input file, 2 more seconds of the generator. */
async function restart(place: Place): Promise<{ error: (Error & { code?: string }) | null }> {
  writeInput(place, 2);
  try {
    await run(place, 4000);
    return { error: null };
  } catch (e) {
    return { error: e as Error & { code?: string } };
  }
}

const rowsOf = async (place: Place) =>
  (await readFilesSinkOutput(place.output)).map((r) => JSON.stringify(r)).sort();

/** Every file under `dir`, relative, `/`-separated. */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push(relative(dir, path));
    }
  };
  walk(dir);
  return out;
}

const work = placeIn(join(tempDir(), 'work'));
const pristine = tempDir();
/** The undamaged checkpoint with a batch planned and not run (offsets, no commit): a crash's. */
const planned = tempDir();
let expected: string[];
let stateDir: string;

before(async () => {
  mkdirSync(work.input, { recursive: true });
  for (const n of [0, 1]) {
    writeInput(work, n);
    await run(work, n * 2000);
  }
  stateDir = `state/${(await readMetadata(new CheckpointLayout(work.checkpoint)))!.stateful[0]!.operatorId}`;
  // What the cases below damage. Two runs of 4-row batches (8 rows, then 4 and the generator's,
  // each run ending with the batch without data the watermark's move makes): epochs 0..4 committed, the logs of
  // the last 3 retained, manifests of every epoch (0..2 without rows), state version 5 restored
  // from snapshot 4 and changelog 5, with snapshot 2 and changelog 3 kept for retention.
  assert.deepEqual(listing(work.checkpoint), [
    'commits/2',
    'commits/3',
    'commits/4',
    'metadata',
    'offsets/2',
    'offsets/3',
    'offsets/4',
    'sources/0/files/0',
    'sources/0/files/1',
    'sources/1/schedule',
    ...[0, 1].flatMap((p) =>
      [2, 3, 4, 5].map((v) => `${stateDir}/${p}/${v}.${v % 2 ? 'changelog' : 'snapshot'}`),
    ),
  ]);
  assert.deepEqual(readdirSync(join(work.output, '_manifest')).sort(), ['0', '1', '2', '3', '4']);
  cpSync(join(work.checkpoint, '..'), pristine, { recursive: true });
  cpSync(pristine, planned, { recursive: true });
  const offsets = join(placeIn(planned).checkpoint, 'offsets');
  writeFileSync(join(offsets, '5'), readFileSync(join(offsets, '4')));
  // The undamaged restart: what every harmless case must produce.
  assert.equal((await restart(work)).error, null);
  expected = await rowsOf(work);
  assert.ok(expected.length > 10, `the restart wrote its windows: ${expected.length} rows`);
});

type Damage = 'delete' | 'truncate' | 'flip' | 'garbage';
const damages: Record<Damage, (path: string) => void> = {
  delete: (path) => rmSync(path, { recursive: true }),
  truncate: (path) =>
    writeFileSync(path, readFileSync(path).subarray(0, Math.floor(statSync(path).size / 2))),
  flip: (path) => {
    const bytes = readFileSync(path);
    const at = Math.floor(bytes.length / 3);
    bytes[at] = bytes[at]! ^ 0x04;
    writeFileSync(path, bytes);
  },
  garbage: (path) => writeFileSync(path, 'not a lock'),
};

interface Case {
  /** The damaged file: `checkpoint/…` or `out/…`, with `<state>` for the operator's state directory. */
  readonly file: string;
  readonly damage: Damage;
  readonly restart: 'refused' | 'resumes';
  /** Verify mentions the harmless damage in a note. */
  readonly note?: true;
  /** The copy damaged (default: the pristine checkpoint). */
  readonly base?: 'planned';
}

const all = (file: string, restart: Case['restart'], extra: Partial<Case> = {}): Case[] =>
  (['delete', 'truncate', 'flip'] as const).map((damage) => ({ file, damage, restart, ...extra }));

const cases: Case[] = [
  ...all('checkpoint/metadata', 'refused'),
  ...all('checkpoint/offsets/4', 'refused'),
  { file: 'checkpoint/offsets/2', damage: 'delete', restart: 'resumes', note: true },
  { file: 'checkpoint/offsets/2', damage: 'truncate', restart: 'resumes', note: true },
  { file: 'checkpoint/offsets/2', damage: 'flip', restart: 'resumes', note: true },
  { file: 'checkpoint/commits/4', damage: 'delete', restart: 'resumes' },
  { file: 'checkpoint/commits/4', damage: 'truncate', restart: 'refused' },
  { file: 'checkpoint/commits/4', damage: 'flip', restart: 'refused' },
  { file: 'checkpoint/commits/2', damage: 'delete', restart: 'resumes' },
  { file: 'checkpoint/commits/2', damage: 'truncate', restart: 'resumes', note: true },
  { file: 'checkpoint/commits/2', damage: 'flip', restart: 'resumes', note: true },
  { file: 'checkpoint/offsets/5', damage: 'delete', restart: 'resumes', base: 'planned' },
  { file: 'checkpoint/offsets/5', damage: 'truncate', restart: 'refused', base: 'planned' },
  { file: 'checkpoint/offsets/5', damage: 'flip', restart: 'refused', base: 'planned' },
  ...all('checkpoint/<state>/0/5.changelog', 'refused'),
  ...all('checkpoint/<state>/1/4.snapshot', 'refused'),
  { file: 'checkpoint/<state>/0/2.snapshot', damage: 'delete', restart: 'resumes' },
  { file: 'checkpoint/<state>/0/2.snapshot', damage: 'truncate', restart: 'resumes', note: true },
  { file: 'checkpoint/<state>/0/2.snapshot', damage: 'flip', restart: 'resumes', note: true },
  { file: 'checkpoint/<state>/1', damage: 'delete', restart: 'refused' },
  { file: 'checkpoint/<state>', damage: 'delete', restart: 'refused' },
  { file: 'checkpoint/sources', damage: 'delete', restart: 'refused' },
  ...all('checkpoint/sources/0/files/0', 'refused'),
  ...all('checkpoint/sources/0/files/1', 'refused'),
  ...all('checkpoint/sources/1/schedule', 'refused'),
  ...all('out/_manifest/1', 'refused'),
  ...all('out/_manifest/4', 'refused'),
  { file: 'out/_manifest', damage: 'delete', restart: 'refused' },
  { file: 'checkpoint/lock', damage: 'garbage', restart: 'resumes', note: true },
];

/** Whether a problem or note names `file` (relative to the checkpoint, or absolute outside it). */
const names = (list: readonly CheckpointProblem[], file: string) =>
  list.some((p) => p.file === file || p.file.startsWith(`${file}/`) || p.message.includes(file));

describe('a damaged checkpoint', () => {
  it('resumes undamaged, and with a batch planned and not run, with the same output', async () => {
    for (const base of [pristine, planned]) {
      rmSync(join(work.checkpoint, '..'), { recursive: true });
      cpSync(base, join(work.checkpoint, '..'), { recursive: true });
      const report = await verifyCheckpoint(work.checkpoint);
      assert.deepEqual([report.problems, report.notes], [[], []]);
      assert.equal((await restart(work)).error, null);
      assert.deepEqual(await rowsOf(work), expected);
    }
  });

  for (const c of cases) {
    const verdict =
      c.restart === 'refused' ? 'is refused, naming it' : 'resumes with exactly the right output';
    it(`${c.damage} ${c.file}${c.base ? ' (a batch planned)' : ''}: a restart ${verdict}, and verify agrees`, async () => {
      rmSync(join(work.checkpoint, '..'), { recursive: true });
      cpSync(c.base === 'planned' ? planned : pristine, join(work.checkpoint, '..'), { recursive: true });
      const file = c.file.replace('<state>', stateDir);
      const path = join(work.checkpoint, '..', file);
      damages[c.damage](path);
      const inCheckpoint = file.startsWith('checkpoint/');
      const named = inCheckpoint ? file.slice('checkpoint/'.length) : path;

      const report = await verifyCheckpoint(work.checkpoint);
      const before = [snapshot(work.checkpoint), snapshot(work.output)];
      const { error } = await restart(work);
      if (c.restart === 'refused') {
        assert.equal(error?.code, 'CHECKPOINT_CORRUPT', error?.stack ?? 'the restart was not refused');
        assert.ok(error.message.includes(path), `${error.message}\nnames ${path}`);
        assert.deepEqual(
          [snapshot(work.checkpoint), snapshot(work.output)],
          before,
          'the refused restart wrote nothing',
        );
        assert.ok(names(report.problems, named), `verify names ${named}: ${JSON.stringify(report.problems)}`);
      } else {
        assert.equal(error, null, error?.stack);
        assert.deepEqual(await rowsOf(work), expected);
        assert.deepEqual(report.problems, [], 'verify finds no problem');
        if (c.note)
          assert.ok(names(report.notes, named), `a note names ${named}: ${JSON.stringify(report.notes)}`);
        else assert.deepEqual(report.notes, []);
      }
    });
  }
});
