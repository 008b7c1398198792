import assert from 'node:assert/strict';
import { cpSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { EpochLogs } from '../../src/checkpoint/epoch-logs.js';
import type { CheckpointInspection } from '../../src/checkpoint/inspect.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { CheckpointManager } from '../../src/checkpoint/manager.js';
import type { CheckpointVerification } from '../../src/checkpoint/verify.js';
import { main } from '../../src/cli/main.js';
import { JobContext, type StreamingQuery, sinks, sources, startQuery, Trigger } from '../../src/index.js';
import { analyze } from '../../src/plan/analyze.js';
import type { Payment } from '../fixtures/jobs/aggregations.js';
import type { Sale } from '../fixtures/jobs/hourly-revenue.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { fakeIO } from './fake-io.js';

const aggregations = new URL('../fixtures/jobs/aggregations.js', import.meta.url);
const hourlyRevenue = new URL('../fixtures/jobs/hourly-revenue.js', import.meta.url);

const tempDir = tempDirs('millrace-cli-checkpoint');

async function cli(...args: string[]) {
  const t = fakeIO();
  const code = await main(args, t.io);
  return { code, stdout: t.stdout(), stderr: t.stderr() };
}

/** A fresh copy of a checkpoint, to damage. */
function copyOf(dir: string): string {
  const copy = tempDir();
  cpSync(dir, copy, { recursive: true });
  return copy;
}

const pay = (card: string, amount: number): Payment => ({ card, amount, ts: 0 });

/**
 * A per-card aggregation (2 source partitions, 2 shuffle partitions) run twice on one checkpoint:
 * epoch 0 reads 3 rows from source partition 0 and 2 from partition 1, epoch 1 two more from
 * partition 1. The key hash places cards a, c, e, g in state partition 0 and b, d in partition 1.
 */
let good: string;
before(async () => {
  good = tempDir();
  let previous: StreamingQuery | undefined;
  const runs: Record<number, Payment[]>[] = [
    { 0: [pay('a', 1), pay('b', 2), pay('c', 3)], 1: [pay('a', 4), pay('d', 5)] },
    { 1: [pay('e', 6), pay('g', 7)] },
  ];
  for (const rows of runs) {
    const q = await startQuery(aggregations, {
      checkpointLocation: good,
      clock: 'manual',
      params: { case: 'per-card' },
      continueFrom: previous,
    });
    for (const [partition, batch] of Object.entries(rows))
      q.source('payments').addData(batch, Number(partition));
    await q.processAllAvailable();
    await q.stop();
    previous = q;
  }
});

describe('millrace checkpoint inspect', () => {
  it('shows the last committed epoch, what a restart does, the offsets per partition and the keys per state partition', async () => {
    const r = await cli('checkpoint', 'inspect', good);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ {2}source 0 payments: memory, 2 partitions$/m);
    assert.match(r.stdout, /^ {2}offsets {2}0\.\.1 \(2 files\)$/m);
    assert.match(r.stdout, /^ {2}commits {2}0\.\.1 \(2 files\)$/m);
    assert.match(r.stdout, /^ {2}last committed epoch: 1$/m);
    assert.match(
      r.stdout,
      /a restart resumes after epoch 1: its first epoch is 2, and state is restored to version 2/,
    );
    assert.match(r.stdout, /^ {2}source 0 payments: partition 0 at 3, partition 1 at 4$/m);
    assert.match(r.stdout, /operator \d+ aggregate: 6 keys, \d+ B in 2 partitions/);
    assert.match(
      r.stdout,
      /partition 0: 4 keys, \d+ B; restores from changelogs 1\.\.2; on disk: no snapshots/,
    );
    assert.match(
      r.stdout,
      /partition 1: 2 keys, \d+ B; restores from changelogs 1\.\.2; on disk: no snapshots/,
    );
    assert.match(r.stdout, /^ {2}none: no run holds this checkpoint$/m);
  });

  it('prints one JSON object with --json', async () => {
    const r = await cli('checkpoint', 'inspect', good, '--json');
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as CheckpointInspection;
    assert.equal(report.location, good);
    assert.deepEqual(report.commitEpochs, { count: 2, first: 0, last: 1 });
    assert.deepEqual(report.restart, { resumeAfter: 1, nextEpoch: 2, redoEpoch: null, restoreVersion: 2 });
    assert.deepEqual(report.offsets?.sources, [
      { key: '0', index: 0, name: 'payments', offsets: { 0: 3, 1: 4 } },
    ]);
    assert.deepEqual(
      report.state.map((op) => [
        op.kind,
        op.keys,
        op.partitions.map((p) => [p.partition, p.keys, p.changelogs]),
      ]),
      [
        [
          'aggregate',
          6,
          [
            [0, 4, [1, 2]],
            [1, 2, [1, 2]],
          ],
        ],
      ],
    );
    assert.ok(report.state[0]!.bytes > 0);
    assert.equal(report.lock, null);
    assert.deepEqual(report.problems, []);
  });

  it('shows the watermarks the last commit reached', async () => {
    const dir = tempDir();
    const q = await startQuery(hourlyRevenue, { checkpointLocation: dir, clock: 'manual' });
    const at = (hh: number, mm: number) => Date.UTC(2026, 0, 15, hh, mm);
    q.source<Sale>('sales').addData([
      { amount: 15, ts: at(14, 40) },
      { amount: 30, ts: at(15, 10) },
    ]);
    await q.processAllAvailable();
    await q.stop();
    const r = await cli('checkpoint', 'inspect', dir, '--json');
    const report = JSON.parse(r.stdout) as CheckpointInspection;
    // Max event time 15:10, 15-minute delay.
    assert.deepEqual(report.watermarks, {
      epoch: 0,
      nextBatchWatermarkMs: at(14, 55),
      inputs: [at(14, 55)],
      heldBack: [],
    });
    const text = await cli('checkpoint', 'inspect', dir);
    assert.match(text.stdout, /^ {2}input 0 +2026-01-15T14:55:00\.000Z \(\d+\)$/m);
  });

  it('names the source partition that held the watermark back at the last commit, and by how much', async () => {
    // Two sources; at the end of epoch 0, partition 2 of the second was behind, 17.25 s back.
    const dir = tempDir();
    const j = new JobContext({});
    const read = (name: string, partitions: number) =>
      j.readStream(sources.memory<Payment>({ name, partitions })).withWatermark('ts', '5 seconds');
    const plan = analyze(
      read('payments', 2)
        .union(read('refunds', 3))
        .writeStream(sinks.memory({ name: 'out' }))
        .trigger(Trigger.realTime('2 seconds')).definition,
    );
    const { manager } = await CheckpointManager.open(dir, plan, 'run-1', 'query-1');
    try {
      await manager.writeOffsets(
        0,
        [
          [40, 41],
          [9, 38, 3],
        ],
        { batchWatermarkMs: 0, batchTimestampMs: 0, watermarks: [21_000, 20_000] },
      );
      await manager.writeCommit(
        0,
        20_000,
        [21_000, 20_000],
        [null, { partition: 2, partitionsBehind: 2, heldBackMs: 17_250 }],
      );
    } finally {
      await manager.close();
    }
    const json = JSON.parse(
      (await cli('checkpoint', 'inspect', dir, '--json')).stdout,
    ) as CheckpointInspection;
    assert.deepEqual(json.watermarks?.heldBack, [
      { source: '1', index: 1, name: 'refunds', partition: 2, partitionsBehind: 2, heldBackMs: 17_250 },
    ]);
    const text = await cli('checkpoint', 'inspect', dir);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^ {2}held back by source 1 refunds partition 2: 17\.25 s behind the partition furthest ahead \(2 partitions behind\)$/m,
    );
  });

  it('names the owner of a held lock and says its process is running', async () => {
    const dir = copyOf(good);
    const q = await startQuery(aggregations, {
      checkpointLocation: dir,
      clock: 'manual',
      params: { case: 'per-card' },
    });
    try {
      const r = await cli('checkpoint', 'inspect', dir, '--json');
      const lock = (JSON.parse(r.stdout) as CheckpointInspection).lock;
      assert.equal(lock?.owner.pid, process.pid);
      assert.equal(lock?.owner.runId, q.runId);
      assert.equal(lock?.processAlive, true);
      assert.equal(lock?.held, true);
      const text = await cli('checkpoint', 'inspect', dir);
      assert.match(
        text.stdout,
        new RegExp(`held by run ${q.runId} .*process ${process.pid} .*the process is running`),
      );
      const verify = await cli('checkpoint', 'verify', dir);
      assert.equal(verify.code, 0, verify.stdout);
      assert.match(verify.stdout, /the lock\)/);
    } finally {
      await q.stop();
    }
  });

  it('says a micro-batch planned but not committed is redone first', async () => {
    const dir = copyOf(good);
    const logs = new EpochLogs(new CheckpointLayout(dir));
    await logs.writeOffsets(2, (await logs.readOffsets(1))!);
    const r = await cli('checkpoint', 'inspect', dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /epoch 2 has offsets but no commit: a restart redoes epoch 2 over exactly those offsets/,
    );
    assert.match(r.stdout, /a restart resumes after epoch 1/);
  });

  it('lists what it cannot read, exits 1 and points to verify', async () => {
    const dir = copyOf(good);
    flipByte(join(dir, 'commits', '1'));
    const r = await cli('checkpoint', 'inspect', dir);
    assert.equal(r.code, 1);
    assert.match(
      r.stdout,
      /^ {2}commits\/1 is corrupt: its checksum is [0-9a-f]+, the file says [0-9a-f]+$/m,
    );
    assert.match(r.stdout, /run 'millrace checkpoint verify /);
    assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at /, 'no stack trace');
  });
});

function flipByte(path: string): void {
  const bytes = readFileSync(path);
  bytes[3] = bytes[3]! ^ 0x01;
  writeFileSync(path, bytes);
}

function stateOperator(dir: string): Promise<number> {
  return cli('checkpoint', 'inspect', dir, '--json').then(
    (r) => (JSON.parse(r.stdout) as CheckpointInspection).state[0]!.operatorId,
  );
}

describe('millrace checkpoint verify', () => {
  it('passes a sound checkpoint (exit 0)', async () => {
    const r = await cli('checkpoint', 'verify', good);
    assert.equal(r.code, 0, r.stdout);
    assert.match(
      r.stdout,
      /is sound \(9 files checked: metadata, 2 offsets files, 2 commit files, 4 state files, 0 source files, no lock\); a restart resumes after epoch 1 and can restore the state of 2 stateful partitions/,
    );
    const json = JSON.parse(
      (await cli('checkpoint', 'verify', good, '--json')).stdout,
    ) as CheckpointVerification & {
      ok: boolean;
    };
    assert.equal(json.ok, true);
    assert.deepEqual(json.problems, []);
  });

  it('fails (exit 1) naming a commit file with a flipped byte', async () => {
    const dir = copyOf(good);
    flipByte(join(dir, 'commits', '1'));
    const r = await cli('checkpoint', 'verify', dir);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^commits\/1 is corrupt: its checksum is [0-9a-f]+, the file says [0-9a-f]+$/m);
    assert.match(r.stdout, /^1 problem in checkpoint .*put the named files back from a copy/m);
    const json = JSON.parse(
      (await cli('checkpoint', 'verify', dir, '--json')).stdout,
    ) as CheckpointVerification & {
      ok: boolean;
    };
    assert.equal(json.ok, false);
    assert.deepEqual(
      json.problems.map((p) => p.file),
      ['commits/1'],
    );
  });

  it('fails naming a state changelog the restore chain needs when it is removed', async () => {
    const dir = copyOf(good);
    const op = await stateOperator(dir);
    unlinkSync(join(dir, 'state', String(op), '0', '2.changelog'));
    const r = await cli('checkpoint', 'verify', dir);
    assert.equal(r.code, 1);
    assert.match(
      r.stdout,
      new RegExp(
        `^state/${op}/0/2\\.changelog is missing, and so is state/${op}/0/2\\.snapshot \\(which would replace it\\): a restart restores state version 2 \\(the end of epoch 1\\) and needs it$`,
        'm',
      ),
    );
    assert.match(r.stdout, /^1 problem in checkpoint /m);
  });

  it('fails naming a truncated offsets file', async () => {
    const dir = copyOf(good);
    const path = join(dir, 'offsets', '1');
    writeFileSync(path, readFileSync(path).subarray(0, 20));
    const r = await cli('checkpoint', 'verify', dir);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^offsets\/1 is corrupt: its checksum trailer is missing \(a torn write\?\)$/m);
  });

  it('fails naming the offsets file of the last commit when it is removed', async () => {
    const dir = copyOf(good);
    unlinkSync(join(dir, 'offsets', '1'));
    const r = await cli('checkpoint', 'verify', dir);
    assert.equal(r.code, 1);
    assert.match(
      r.stdout,
      /^offsets\/1 is missing: epoch 1 is committed, and a restart resumes from its offsets$/m,
    );
  });
});

describe('millrace checkpoint usage', () => {
  it('exits 2 on bad usage, a missing directory or one that is not a checkpoint, saying why', async () => {
    const empty = tempDir();
    const cases: [string[], RegExp][] = [
      [['checkpoint'], /name an action: inspect or verify/],
      [['checkpoint', 'explode', good], /unknown action 'explode'/],
      [['checkpoint', 'inspect'], /name one checkpoint directory/],
      [['checkpoint', 'verify', good, good], /name one checkpoint directory/],
      [['checkpoint', 'inspect', good, '--bogus'], /Unknown option '--bogus'/],
      [['checkpoint', 'verify', join(empty, 'nowhere')], /there is no directory .*nowhere/],
      [['checkpoint', 'inspect', empty], /is not a checkpoint: it has no metadata file/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(...args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, message, args.join(' '));
    }
    const help = await cli('checkpoint', '--help');
    assert.equal(help.code, 0);
    assert.match(help.stdout, /millrace checkpoint verify <dir> \[--json\]/);
  });
});
