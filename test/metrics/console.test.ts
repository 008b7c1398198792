import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { Registry } from 'prom-client';
import { startQuery } from '../../src/index.js';
import { serveMetrics } from '../../src/metrics/server.js';
import { type Tick, tick } from '../fixtures/jobs/chains.js';
import { CHROMIUM, CHROMIUM_PATH, missing } from '../peers.js';

const job = new URL('../fixtures/jobs/chains.js', import.meta.url);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => tick(from + i));
/** The page's document, as the functions run in the browser see it. */
declare const document: {
  body: { dataset: Record<string, string | undefined> };
  getElementById(id: string): { textContent: string | null } | null;
};
/** Where the screenshot is kept (test-artifacts/ at the repository's root, not committed). */
const ARTIFACTS = join(process.cwd(), 'test-artifacts');

let browser: Browser | undefined;
after(async () => {
  await browser?.close();
});

async function openBrowser(): Promise<Browser> {
  browser ??= await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    timeout: 30_000,
  });
  return browser;
}

/** Waits (boundedly) until the page's chart data holds at least `n` progress points. */
const points = (page: Page, n: number) =>
  page.waitForFunction((want) => Number(document.body.dataset.points ?? 0) >= want, n, { timeout: 20_000 });

describe('the web console', { skip: missing(CHROMIUM) }, () => {
  it('shows the plan of a running query in headless Chromium, and charts that move as it reports', async () => {
    const registry = new Registry();
    const q = await startQuery(job, {
      params: { case: 'processor-count', trigger: 'microBatch', sourcePartitions: 2 },
      options: { shufflePartitions: 3 },
      clock: 'manual',
      queryName: 'watched',
      metrics: { registry },
    });
    const server = await serveMetrics({ port: 0, registry, consoleIntervalMs: 100 });
    const errors: string[] = [];
    const page = await (await openBrowser()).newPage({ viewport: { width: 1400, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    try {
      q.source<Tick>('in').addData(range(0, 11));
      await q.processAllAvailable();
      assert.equal(server.consoleUrl, server.url.replace(/metrics$/, ''));
      await page.goto(server.consoleUrl!);
      await points(page, 1);

      // The plan: the source stage, the processor, the count, 2 + 3 + 3 tasks on the workers, the rings.
      const stages = await page.locator('#plan [data-stage]').count();
      assert.equal(stages, 3);
      assert.equal(await page.locator('#plan [data-task]').count(), 8);
      const workers = new Set(
        await page
          .locator('#plan [data-task]')
          .evaluateAll((cells) => cells.map((c) => c.getAttribute('data-worker'))),
      );
      assert.ok(workers.size >= 1 && !workers.has(null), 'every task names the worker it runs on');
      const rings = await page.locator('#plan .ring-count').allTextContents();
      assert.deepEqual(rings, ['6 rings', '9 rings'], 'the shuffles: 2 × 3, then 3 × 3 rings');
      assert.match(
        (await page.locator('#plan-caption').textContent()) ?? '',
        /3 stages, 8 tasks on \d+ workers?/,
      );
      assert.equal(await page.locator('#status').textContent(), 'active');
      assert.equal(await page.locator('#query-name').textContent(), 'watched');

      // Two more batches, a second apart: the charts and the progress table follow.
      for (const from of [12, 24]) {
        q.clock.advance(1000);
        q.source<Tick>('in').addData(range(from, from + 11));
        await q.processAllAvailable();
      }
      await points(page, q.recentProgress.length);
      assert.ok(q.recentProgress.length >= 3);
      const rows = await page.locator('#progress tbody tr').count();
      assert.equal(rows, Math.min(10, q.recentProgress.length));
      const epochs = await page.locator('#commits tbody tr td:first-child').allTextContents();
      assert.ok(epochs.length >= 1, 'committed epochs are listed');
      assert.deepEqual(
        epochs,
        q.recentCommits.map((c) => String(c.epoch)).reverse(),
        'the newest first, as the query reports them',
      );
      // uPlot drew the charts: one canvas each.
      assert.equal(await page.locator('.chart canvas').count(), 4);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'console.png'), fullPage: true });

      // Stopped, the query shows as terminated.
      await q.stop();
      await page.waitForFunction(
        () => document.getElementById('status')?.textContent === 'terminated',
        null,
        {
          timeout: 20_000,
        },
      );
      assert.deepEqual(errors, [], 'the page ran without errors');
    } finally {
      await page.close();
      await server.close();
      await q.stop();
    }
  });

  it('serves its page, its script and uPlot from the package, and the same views as JSON', async () => {
    const registry = new Registry();
    const q = await startQuery(job, {
      params: { case: 'window-window', trigger: 'microBatch' },
      clock: 'manual',
      queryName: 'listed',
      metrics: { registry },
    });
    const server = await serveMetrics({ port: 0, registry });
    try {
      const base = server.consoleUrl!;
      const page = await fetch(base);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type')!, /^text\/html/);
      const html = await page.text();
      for (const asset of ['/uPlot.iife.min.js', '/uPlot.min.css', '/console.js', '/console.css']) {
        assert.ok(html.includes(`"${asset}"`), `the page loads ${asset}`);
        const res = await fetch(new URL(asset, base));
        assert.equal(res.status, 200, asset);
        assert.ok((await res.arrayBuffer()).byteLength > 100, `${asset} has content`);
      }
      const listed = (await (await fetch(new URL('/api/queries', base))).json()) as {
        name: string;
        state: string;
        topology: { stages: unknown[] };
      }[];
      assert.deepEqual(
        listed.map((l) => [l.name, l.state, l.topology.stages.length]),
        [['listed', 'active', 3]],
      );
      assert.equal((await fetch(new URL('/nothing', base))).status, 404);
      const bare = await serveMetrics({ port: 0, registry, console: false });
      try {
        assert.equal(bare.consoleUrl, null);
        assert.equal((await fetch(new URL('/', bare.url))).status, 404, 'no console when it is turned off');
        assert.equal((await fetch(bare.url)).status, 200);
      } finally {
        await bare.close();
      }
    } finally {
      await server.close();
      await q.stop();
    }
  });
});
