import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EpochLogs } from '../../src/checkpoint/epoch-logs.js';
import { CheckpointLayout } from '../../src/checkpoint/layout.js';
import { main } from '../../src/cli/main.js';
import { type StreamingQueryProgress, startQuery } from '../../src/index.js';
import { fakeIO } from './fake-io.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/jobs/${name}`, import.meta.url));

describe('millrace run', () => {
  it('runs a job for its duration, printing one JSON progress object a line when not on a terminal', async () => {
    const t = fakeIO();
    const code = await main(
      [
        'run',
        fixture('rate.js'),
        '--param',
        'rowsPerSecond=200',
        '-p',
        'progressInterval=300ms',
        '--duration',
        '1200ms',
      ],
      t.io,
    );
    assert.equal(code, 0, t.stderr());
    const progress = t
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as StreamingQueryProgress);
    assert.ok(progress.length >= 2, `several progress lines (got ${progress.length})`);
    assert.ok(progress.every((p) => p.sources[0]?.description.startsWith('RateStreamV2')));
    assert.ok(progress.reduce((n, p) => n + p.numInputRows, 0) > 0, 'rows were read');
  });

  it('shows a live status line on a terminal and a latency summary at the end', async () => {
    const t = fakeIO(true);
    const code = await main(
      [
        'run',
        fixture('rate.js'),
        '-p',
        'rowsPerSecond=200',
        '-p',
        'progressInterval=300ms',
        '--duration',
        '1200ms',
      ],
      t.io,
    );
    assert.equal(code, 0, t.stderr());
    const out = t.stdout();
    assert.ok(out.includes('\r\u001b[2K'), 'the status line is redrawn in place');
    assert.match(out, /\d+ rows\/s · e2e p50 [\d.]+ ms p99 [\d.]+ ms · out \d+ · epoch 0/);
    assert.match(out, /ran \d+\.\d s; \d+ rows reached the sink/);
    assert.match(out, /^e2e\s+[\d.]+\s+[\d.]+/m);
    assert.doesNotMatch(out, /"runId"/, 'no JSON progress on a terminal');
  });

  it('stops on Ctrl-C and exits 0', async () => {
    const t = fakeIO();
    const running = main(['run', fixture('rate.js'), '--progress', 'json'], t.io);
    // Ctrl-C as soon as the query is running: its first progress line shows it is.
    const deadline = Date.now() + 30_000;
    while (!t.stdout().includes('"runId"')) {
      assert.ok(Date.now() < deadline, 'the query reported progress');
      await new Promise((resolve) => setImmediate(resolve));
    }
    t.interrupt();
    assert.equal(await running, 0);
  });

  it('keeps a checkpoint with --checkpoint, goes on from it in the next run, and refuses a busy one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'millrace-cli-ckpt-'));
    try {
      const args = [
        'run',
        fixture('rate.js'),
        '-p',
        'rowsPerSecond=200',
        '--checkpoint',
        dir,
        '--duration',
        '600ms',
      ];
      for (const run of [1, 2]) {
        const t = fakeIO();
        assert.equal(await main(args, t.io), 0, t.stderr());
        assert.equal(readdirSync(join(dir, 'commits')).length, run, `run ${run} committed its epoch`);
      }
      const logs = new EpochLogs(new CheckpointLayout(dir));
      const [first, second] = [(await logs.readOffsets(0))!, (await logs.readOffsets(1))!];
      const total = (e: typeof first) => Object.values(e.sources[0]!.offsets).reduce((a, b) => a + b, 0);
      assert.ok(total(second) > total(first), 'the second run read on from where the first stopped');

      const holder = await startQuery(fixture('rate.js'), { checkpointLocation: dir, clock: 'manual' });
      try {
        const t = fakeIO();
        assert.equal(await main(args, t.io), 1);
        assert.match(t.stderr(), /\[CHECKPOINT_IN_USE\]/);
      } finally {
        await holder.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 1 with the error when the query fails', async () => {
    const t = fakeIO();
    const code = await main(['run', fixture('failing-generator.js'), '--progress', 'json'], t.io);
    assert.equal(code, 1);
    assert.match(t.stderr(), /the query failed: row five is cursed .*\[TASK_FAILED\]/);
  });

  it('exits 2 on bad usage or a bad job, saying why', async () => {
    const cases: [string[], RegExp][] = [
      [[], /Usage:/],
      [['explode'], /unknown command 'explode'/],
      [['run'], /name one job module/],
      [['run', fixture('rate.js'), '--param', 'novalue'], /--param expects key=value/],
      [['run', fixture('rate.js'), '--duration', 'soon'], /cannot read 'soon'/],
      [['run', fixture('rate.js'), '--bogus'], /Unknown option '--bogus'/],
      [['run', '/no/such/job.js'], /cannot load job module.*\[INVALID_JOB\]/],
      [['run', fixture('invalid.js'), '-p', 'case=complete-mode'], /\[OUTPUT_MODE_NOT_SUPPORTED\]/],
      [['demo', '--rate', 'fast'], /--rate must be a positive number/],
      [['run', fixture('rate.js'), '--group-instance-id', 'host-a'], /--group-instance-id needs --group/],
    ];
    for (const [args, message] of cases) {
      const t = fakeIO();
      assert.equal(await main(args, t.io), 2, args.join(' '));
      assert.match(t.stderr(), message, args.join(' '));
    }
  });

  it('prints its version and usage', async () => {
    const t = fakeIO();
    assert.equal(await main(['--version'], t.io), 0);
    assert.match(t.stdout(), /^\d+\.\d+\.\d+\n$/);
    assert.equal(await main(['--help'], t.io), 0);
    assert.match(t.stdout(), /millrace demo/);
  });

  it('prints the usage of every command for --help, and exits 0', async () => {
    for (const [args, usage] of [
      [['run', '--help'], /^Usage: millrace run <job>/],
      [['run', 'jobs/payments.ts', '-h'], /^Usage: millrace run <job>/],
      [['demo', '--help'], /^Usage: millrace demo/],
      [['checkpoint', 'inspect', '--help'], /^Usage: millrace checkpoint inspect <dir>/],
      [['bench', '--help'], /^millrace bench <scenario>/],
      [['bench', 'fraud', '--help'], /^millrace bench fraud/],
    ] as const) {
      const t = fakeIO();
      assert.equal(await main([...args], t.io), 0, args.join(' '));
      assert.match(t.stdout(), usage, args.join(' '));
      assert.equal(t.stderr(), '', args.join(' '));
    }
  });
});

describe('millrace demo', () => {
  it('serves its metrics, prints alerts as the detector raises them, then sums up alerts, spend, replays and latency', async () => {
    const t = fakeIO();
    const running = main(['demo', '--rate', '10000', '--duration', '2s'], t.io);
    // The metrics are served while it runs, once the query started.
    const [, url] = await t.printed(/Metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/);
    assert.match(await (await fetch(url!)).text(), /^# TYPE millrace_input_rows_total counter$/m);
    const [, consoleUrl] = await t.printed(/Console: (http:\/\/127\.0\.0\.1:\d+\/)$/m);
    const views = (await (await fetch(new URL('api/queries', consoleUrl))).json()) as { name: string }[];
    assert.ok(
      views.some((v) => v.name === 'fraud-demo'),
      'the console shows the demo query (beside the ended queries of earlier tests in this process)',
    );
    const code = await running;
    assert.equal(code, 0, t.stderr());
    const out = t.stdout();
    const checkpoints = /checkpoints in (\S+millrace-demo-\S+)/.exec(out)?.[1];
    assert.ok(checkpoints !== undefined && !existsSync(checkpoints), 'the temporary checkpoints are removed');
    assert.match(out, /ALERT burst +card-\d+ /, 'the first burst (1 s in) was printed');
    assert.match(out, /Fraud demo finished: \d+ alerts \(/);
    assert.match(out, /per-card spend: [\d,]+ card windows of 10 s closed/);
    assert.match(out, /replayed payments dropped: [\d,]+/);
    assert.match(out, /latency \(ms\)\s+p50\s+p90\s+p99\s+p99\.9\s+p99\.99\s+max/);
    assert.match(out, /^e2e\s+\d/m);
  });
});
