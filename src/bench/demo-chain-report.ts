import type { DemoChainResult } from './demo-chain.js';
import { formatCount, formatLatency, formatRate, renderTable } from './format.js';
import { BUSY_MACHINE_PERCENT, describeMachine } from './machine.js';
import { displayPath, probeList, renderTargets } from './report.js';

const ratio = (v: number | null): string => (v === null ? '–' : `${v.toFixed(2)} ×`);

/**
 * What `millrace bench fraud --chain demo` prints: per rate, one line per variant — the whole
 * run's percentiles from a cold start, the first seconds' on their own, and the p99s against the
 * chain without the model — then the sustainable rates, the targets and the files.
 */
export function renderDemoChainReport(r: DemoChainResult): string {
  const s = r.settings;
  let out = `millrace bench fraud --chain demo: ${r.description}\n`;
  out += `machine: ${describeMachine(r.machine)}\n`;
  out +=
    'method: constant rate, e2e latency = emit − scheduled time (no coordinated omission); ' +
    `each run from a cold start (a new query, nothing excluded), ${s.durationMs / 1000} s; ` +
    `${s.runs} run${s.runs === 1 ? '' : 's'} per variant and rate${s.runs > 1 ? ' (medians)' : ''}\n\n`;
  const first = `first ${s.firstMs / 1000} s`;
  const headers = [
    'variant',
    'p50',
    'p99',
    'p99.9',
    'max',
    'rows',
    'sustained',
    `${first}: p50`,
    'p99',
    'max',
    'p99 / no model',
    `${first}: p99 / no model`,
  ];
  for (const at of r.rates) {
    out += `at ${formatRate(at.rate)} payments/s: the whole run, then its first seconds\n`;
    const rows = at.variants.map((v) => {
      const m = v.whole.median;
      return [
        v.variant,
        formatLatency(m.p50),
        formatLatency(m.p99),
        formatLatency(m.p999),
        formatLatency(m.max),
        formatCount(m.count),
        v.whole.sustainable ? 'yes' : 'no',
        formatLatency(v.first.p50),
        formatLatency(v.first.p99),
        formatLatency(v.first.max),
        ratio(v.p99VsNoModel),
        ratio(v.firstP99VsNoModel),
      ];
    });
    out += renderTable(
      headers,
      rows,
      headers.map((_, i) => (i === 0 ? 'left' : 'right')),
    );
    out += '\n';
  }
  if (r.findMax !== null) {
    out += 'highest sustainable rate (backlog bounded, p99 < 20 ms) by variant\n';
    const variants = Object.entries(r.findMax);
    out += renderTable(
      ['variant', 'sustained', 'not sustained', 'probes'],
      variants.map(([v, f]) => [
        v,
        f.best > 0 ? `${formatRate(f.best)} payments/s` : 'none',
        f.worst === null ? '–' : `${formatRate(f.worst)} payments/s`,
        probeList(f),
      ]),
      ['left', 'right', 'right', 'left'],
    );
    const f = variants[0]?.[1];
    if (f)
      out +=
        `(probes: ${f.warmupMs / 1000} s warm-up, ${f.durationMs / 1000} s measured; ` +
        '(2): passed or failed on a second try; a search stops at its time budget)\n';
    out += '\n';
  } else {
    out += '(sustainable rates not searched: --find-max)\n\n';
  }
  const busy = Math.max(
    0,
    ...r.rates.flatMap((at) => at.variants.flatMap((v) => v.whole.runs.map((run) => run.foreignCpuPercent))),
  );
  if (busy > BUSY_MACHINE_PERCENT)
    out += `warning: other processes used up to ${busy} % of the CPUs before some runs; the figures are noisy\n\n`;
  out += renderTargets(r.targets, 'D1 and D2 are defined at 5 000 payments/s; D3 needs --find-max');
  if (r.files.length > 0) out += `files:\n${r.files.map((f) => `  ${displayPath(f)}\n`).join('')}`;
  return out;
}
