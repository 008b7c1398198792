import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Registry, register } from 'prom-client';
import { type StreamingQuery, startQuery } from '../../src/index.js';
import { serveMetrics } from '../../src/metrics/server.js';
import { type Tick, tick } from '../fixtures/jobs/chains.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { missing, PROMTOOL } from '../peers.js';

const job = new URL('../fixtures/jobs/chains.js', import.meta.url);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => tick(from + i));
const tempDir = tempDirs('millrace-metrics');

/** The value of one series (`name{labels}`), or undefined when the registry has none. */
async function value(registry: Registry, name: string, labels: Record<string, string>) {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const series = metric?.values.find((v) =>
    Object.entries(labels).every(([k, l]) => String((v.labels as Record<string, unknown>)[k]) === l),
  );
  return series?.value;
}

/** A window-of-windows query in micro-batches on a manual clock, its metrics in `registry`. */
function start(registry: Registry, name: string, checkpointLocation: string) {
  return startQuery(job, {
    params: { case: 'window-window', trigger: 'microBatch' },
    clock: 'manual',
    queryName: name,
    checkpointLocation,
    metrics: { registry },
  });
}

async function feed(q: StreamingQuery, rows: Tick[]) {
  q.source<Tick>('in').addData(rows);
  await q.processAllAvailable();
}

describe('Prometheus metrics of a query', () => {
  it('count its rows, show its state and watermark, in a registry of its own', async () => {
    const registry = new Registry();
    const q = await start(registry, 'ticks', tempDir());
    try {
      await feed(q, range(10, 21));
      const query = { query: 'ticks' };
      assert.equal(await value(registry, 'millrace_input_rows_total', query), 12);
      assert.equal(await value(registry, 'millrace_output_rows_total', query), 1);
      assert.equal(
        await value(registry, 'millrace_state_rows', { ...query, operator: '0:stateStoreSave' }),
        1,
      );
      assert.equal(
        await value(registry, 'millrace_state_rows', { ...query, operator: '1:stateStoreSave' }),
        0,
      );
      assert.equal(await value(registry, 'millrace_watermark_seconds', query), 21);
      assert.equal(await value(registry, 'millrace_query_status', { ...query, state: 'active' }), 1);
      assert.equal(await value(registry, 'millrace_query_status', { ...query, state: 'terminated' }), 0);
      const commit = await value(registry, 'millrace_state_commit_seconds_total', {
        ...query,
        operator: '0:stateStoreSave',
      });
      assert.ok(commit !== undefined && commit > 0, `the checkpoint writes were timed (${commit} s)`);
      const e2e = await value(registry, 'millrace_latency_seconds', {
        ...query,
        kind: 'e2e',
        percentile: '99',
      });
      assert.ok(e2e !== undefined && e2e >= 0, 'the e2e p99 of the interval is there');
      // A series per task: how full its fullest input ring is, and its backpressure.
      const families = await registry.getMetricsAsJSON();
      const fill = families.find((m) => m.name === 'millrace_task_input_fill_ratio')!.values;
      const stages = new Set(fill.map((v) => v.labels.stage));
      assert.ok(stages.size >= 3, `the source stage and both aggregations' (${[...stages].join(', ')})`);
      assert.ok(fill.every((v) => v.value >= 0 && v.value <= 1));
      const waited = families.find((m) => m.name === 'millrace_task_backpressure_seconds_total')!.values;
      assert.equal(waited.length, fill.length, 'backpressure for every task');
      // 10…19 are late at the first aggregation once [10,15) and [15,20) closed.
      await feed(q, range(10, 29));
      assert.equal(await value(registry, 'millrace_input_rows_total', query), 32);
      assert.equal(
        await value(registry, 'millrace_late_rows_total', { ...query, operator: '0:stateStoreSave' }),
        10,
      );
    } finally {
      await q.stop();
    }
    assert.equal(await value(registry, 'millrace_query_status', { query: 'ticks', state: 'terminated' }), 1);
  });

  it("time each epoch's commit on the driver, and count the checkpoint's bytes as they are on disk", async () => {
    const registry = new Registry();
    const checkpoint = tempDir();
    const q = await start(registry, 'ticks', checkpoint);
    try {
      await feed(q, range(10, 21));
      await feed(q, range(22, 31));
      const query = { query: 'ticks' };
      const commits = q.recentCommits;
      // Each batch with rows, and the batches after them that only move the watermark on.
      assert.ok(commits.length >= 2);
      assert.deepEqual(
        commits.map((c) => c.epoch),
        commits.map((_, i) => i),
      );
      const histogram = (await registry.getMetricsAsJSON()).find(
        (m) => m.name === 'millrace_checkpoint_commit_duration_seconds',
      )!.values;
      const count = histogram.find((v) =>
        (v as { metricName?: string }).metricName?.endsWith('_count'),
      )?.value;
      const sum =
        histogram.find((v) => (v as { metricName?: string }).metricName?.endsWith('_sum'))?.value ?? 0;
      assert.equal(count, commits.length, 'one observation per epoch');
      const summed = commits.reduce((n, c) => n + c.durationMs, 0) / 1000;
      assert.ok(Math.abs(sum - summed) < 1e-9 && sum > 0, `the epochs' commit times (${sum} s)`);
      assert.equal(await value(registry, 'millrace_checkpoint_committed_epoch', query), commits.length - 1);
      const onDisk = (dir: string) =>
        readdirSync(join(checkpoint, dir), { recursive: true, withFileTypes: true })
          .filter((e) => e.isFile())
          .reduce((n, e) => n + statSync(join(e.parentPath, e.name)).size, 0);
      const logs = onDisk('offsets') + onDisk('commits');
      assert.equal(await value(registry, 'millrace_checkpoint_log_written_bytes_total', query), logs);
      assert.equal(
        commits.reduce((n, c) => n + c.logBytes, 0),
        logs,
      );
      const state = await registry.getMetricsAsJSON();
      const written = state
        .find((m) => m.name === 'millrace_state_checkpoint_written_bytes_total')!
        .values.reduce((n, v) => n + v.value, 0);
      assert.equal(written, onDisk('state'), 'the state files, every operator and partition');
    } finally {
      await q.stop();
    }
  });

  it('count on across a restart from the checkpoint', async () => {
    const registry = new Registry();
    const checkpoint = tempDir();
    let q = await start(registry, 'ticks', checkpoint);
    try {
      await feed(q, range(10, 21));
      await q.stop();
      q = await start(registry, 'ticks', checkpoint);
      await feed(q, range(30, 31));
      assert.equal(await value(registry, 'millrace_input_rows_total', { query: 'ticks' }), 14);
      assert.equal(await value(registry, 'millrace_output_rows_total', { query: 'ticks' }), 2);
      assert.equal(await value(registry, 'millrace_query_status', { query: 'ticks', state: 'active' }), 1);
    } finally {
      await q.stop();
    }
  });

  it('keep two queries of one process apart', async () => {
    const registry = new Registry();
    const a = await start(registry, 'a', tempDir());
    const b = await start(registry, 'b', tempDir());
    try {
      await feed(a, range(10, 21));
      await feed(b, range(10, 12));
      assert.equal(await value(registry, 'millrace_input_rows_total', { query: 'a' }), 12);
      assert.equal(await value(registry, 'millrace_input_rows_total', { query: 'b' }), 3);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('are an exposition promtool accepts, served at /metrics on loopback', {
    skip: missing(PROMTOOL),
  }, async () => {
    const registry = new Registry();
    const q = await start(registry, 'ticks', tempDir());
    const server = await serveMetrics({ port: 0, registry });
    try {
      await feed(q, range(10, 21));
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const res = await fetch(server.url);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      const text = await res.text();
      assert.match(text, /^millrace_input_rows_total\{query="ticks"\} 12$/m);
      const check = spawnSync('promtool', ['check', 'metrics'], {
        input: text,
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(check.error, undefined, 'promtool runs (Debian package prometheus)');
      assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);
      assert.equal((await fetch(new URL('/elsewhere', server.url))).status, 404);
    } finally {
      await server.close();
      await q.stop();
    }
  });

  it("go to prom-client's default registry, unless the query is started with metrics: false", async () => {
    const started = (name: string, metrics?: false) =>
      startQuery(job, {
        params: { case: 'window-window', trigger: 'microBatch' },
        clock: 'manual',
        queryName: name,
        ...(metrics === false && { metrics }),
      });
    const metered = await started('metered');
    const unmetered = await started('unmetered', false);
    try {
      await feed(metered, range(10, 12));
      await feed(unmetered, range(10, 12));
      assert.equal(await value(register, 'millrace_input_rows_total', { query: 'metered' }), 3);
      assert.equal(await value(register, 'millrace_input_rows_total', { query: 'unmetered' }), undefined);
    } finally {
      await Promise.all([metered.stop(), unmetered.stop()]);
    }
  });
});
