import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { startQuery } from '../../src/index.js';
import { serveMetrics } from '../../src/metrics/server.js';
import { type Tick, tick } from '../fixtures/jobs/chains.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { missing, PROMETHEUS } from '../peers.js';

const job = new URL('../fixtures/jobs/chains.js', import.meta.url);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => tick(from + i));
const tempDir = tempDirs('millrace-prometheus');
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** A port free on loopback now (Prometheus takes no port 0). */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Asks `probe` every 200 ms until it returns a value, for at most `ms`. */
async function poll<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await delay(200);
  }
  throw new Error(`${what}: nothing within ${ms} ms${last === undefined ? '' : ` (${String(last)})`}`);
}

describe('a real Prometheus server', { skip: missing(PROMETHEUS) }, () => {
  it('scrapes a running query and its HTTP API returns the millrace_ series as they move', async () => {
    const registry = new Registry();
    const q = await startQuery(job, {
      params: { case: 'window-window', trigger: 'microBatch' },
      clock: 'manual',
      queryName: 'scraped',
      metrics: { registry },
    });
    const metrics = await serveMetrics({ port: 0, registry });
    const dir = tempDir();
    const port = await freePort();
    const target = new URL(metrics.url).host;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 250ms\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: millrace\n    static_configs:\n      - targets: ['${target}']\n`,
    );
    const prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.add(prometheus);
    let log = '';
    prometheus.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
    });
    const api = `http://127.0.0.1:${port}`;
    /** The scraped value of the input-rows counter, once it is `want`. */
    const scraped = (want: number) =>
      poll(`Prometheus reports ${want} input rows`, 30_000, async () => {
        const res = await fetch(
          `${api}/api/v1/query?query=${encodeURIComponent('millrace_input_rows_total{query="scraped"}')}`,
        );
        const body = (await res.json()) as {
          data: { result: { metric: Record<string, string>; value: [number, string] }[] };
        };
        const series = body.data.result[0];
        return series !== undefined && Number(series.value[1]) === want ? series : undefined;
      });
    try {
      await poll('Prometheus ready', 30_000, async () =>
        (await fetch(`${api}/-/ready`)).ok ? true : undefined,
      );
      q.source<Tick>('in').addData(range(10, 21));
      await q.processAllAvailable();
      const first = await scraped(12);
      assert.equal(first.metric.job, 'millrace');
      q.source<Tick>('in').addData(range(10, 29));
      await q.processAllAvailable();
      await scraped(32);
      // The target is up and every family the query exports made it in.
      const names = await poll('series names', 10_000, async () => {
        const res = await fetch(`${api}/api/v1/label/__name__/values`);
        const all = ((await res.json()) as { data: string[] }).data.filter((n) => n.startsWith('millrace_'));
        return all.includes('millrace_state_rows') ? all : undefined;
      });
      for (const name of [
        'millrace_output_rows_total',
        'millrace_watermark_seconds',
        'millrace_query_status',
      ])
        assert.ok(names.includes(name), `${name} is scraped (${names.join(', ')})`);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nprometheus log:\n${log.slice(-2000)}`);
    } finally {
      prometheus.kill('SIGTERM');
      if (prometheus.exitCode === null) await once(prometheus, 'exit');
      children.delete(prometheus);
      await metrics.close();
      await q.stop();
    }
  });
});
