import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { startQuery } from '../../src/index.js';
import { type Tick, tick } from '../fixtures/jobs/chains.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { missing, PROMTOOL } from '../peers.js';

const DASHBOARD = new URL('../../../docs/grafana/millrace-dashboard.json', import.meta.url);
const job = new URL('../fixtures/jobs/chains.js', import.meta.url);
const tempDir = tempDirs('millrace-grafana');

interface Dashboard {
  panels: { title: string; targets: { expr: string }[] }[];
  templating: { list: { definition?: string }[] };
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const expressions = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));

describe('the Grafana dashboard in docs/', () => {
  it('names only metrics the engine exports', async () => {
    const registry = new Registry();
    const q = await startQuery(job, {
      params: { case: 'window-window', trigger: 'microBatch' },
      clock: 'manual',
      metrics: { registry },
    });
    try {
      q.source<Tick>('in').addData([tick(10), tick(21)]);
      await q.processAllAvailable();
    } finally {
      await q.stop();
    }
    // A histogram is exposed as its _bucket, _sum and _count series.
    const exported = new Set(
      (await registry.getMetricsAsJSON()).flatMap((m) =>
        String(m.type) === 'histogram' ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name],
      ),
    );
    const used = [
      ...expressions.map((e) => e.expr),
      ...dashboard.templating.list.map((v) => v.definition ?? ''),
    ].flatMap((text) => text.match(/\bmillrace_[a-z_]+/g) ?? []);
    assert.ok(used.length >= 10, `the dashboard uses the metrics (${used.length})`);
    for (const name of new Set(used)) assert.ok(exported.has(name), `${name} is exported`);
  });

  it('holds PromQL that promtool parses', { skip: missing(PROMTOOL) }, () => {
    // Grafana's variables as Prometheus would see them once Grafana filled them in.
    const rules = expressions.map(({ expr }, i) => ({
      record: `millrace:dashboard_panel_${i}`,
      expr: expr.replaceAll('$__rate_interval', '1m').replaceAll('$query', '.*'),
    }));
    const file = join(tempDir(), 'dashboard-rules.yml');
    writeFileSync(
      file,
      `groups:\n  - name: dashboard\n    rules:\n${rules.map((r) => `      - record: ${r.record}\n        expr: ${JSON.stringify(r.expr)}\n`).join('')}`,
    );
    const check = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(check.error, undefined, 'promtool runs (Debian package prometheus)');
    assert.equal(check.status, 0, `promtool check rules: ${check.stdout}${check.stderr}`);
    assert.match(check.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });
});
