import type { ArrowUdfResult, ArrowUdfVariantResult } from './arrow-udf.js';
import { formatCount, formatLatency, formatRate, renderTable } from './format.js';
import { BUSY_MACHINE_PERCENT } from './machine.js';
import { displayPath, probeList, renderHeader } from './report.js';

const ratio = (v: number | null): string => (v === null ? '–' : `${v.toFixed(2)} ×`);

const batchCell = (v: ArrowUdfVariantResult): string =>
  v.batchSize === null ? '–' : formatCount(v.batchSize);

/**
 * What `millrace bench arrow-udf` prints: one line per variant — latency at the constant rate,
 * the highest sustainable rate, p99 against the scalar variant's, and the sustainable rate
 * against the Arrow variant's with batch size 1 — then the probes of the search and the files.
 */
export function renderArrowUdfReport(r: ArrowUdfResult): string {
  let out = `${renderHeader('arrow-udf', r.description, r.machine, r.settings)}\n`;
  const searched = r.settings.findMax;
  out += `at ${formatRate(r.settings.rate)} rows/s${r.settings.runs > 1 ? ' (medians of the runs)' : ''}, `;
  out += `the Arrow UDF ${r.settings.placements
    .map((p) =>
      p === 'inline'
        ? "on the task's thread (arrow-<batch size>)"
        : 'on a UDF thread (arrow-<batch size>-isolated)',
    )
    .join(' and ')}\n`;
  const headers = [
    'variant',
    'batch size',
    'p50',
    'p99',
    'p99.9',
    'max',
    'rows',
    'sustained',
    'max sustainable rows/s',
    'p99 / scalar',
    'rate / batch 1',
  ];
  const rows = r.variants.map((v) => {
    const m = v.latency.median;
    return [
      v.variant,
      batchCell(v),
      formatLatency(m.p50),
      formatLatency(m.p99),
      formatLatency(m.p999),
      formatLatency(m.max),
      formatCount(m.count),
      v.latency.sustainable ? 'yes' : 'no',
      v.findMax === null ? '–' : v.findMax.best > 0 ? formatRate(v.findMax.best) : 'none',
      ratio(v.p99VsScalar),
      ratio(v.throughputVsBatch1),
    ];
  });
  out += renderTable(
    headers,
    rows,
    headers.map((_, i) => (i === 0 ? 'left' : 'right')),
  );
  if (!searched) out += '(sustainable rates not searched: --no-find-max)\n';
  out += '\n';
  if (searched) {
    out +=
      'highest sustainable rate (backlog bounded, p99 < 100 ms: a batch adds latency by design) by variant\n';
    out += renderTable(
      ['variant', 'sustained', 'not sustained', 'probes'],
      r.variants.map((v) => [
        v.variant,
        v.findMax && v.findMax.best > 0 ? `${formatRate(v.findMax.best)} rows/s` : 'none',
        v.findMax?.worst == null ? '–' : `${formatRate(v.findMax.worst)} rows/s`,
        v.findMax === null ? '' : probeList(v.findMax),
      ]),
      ['left', 'right', 'right', 'left'],
    );
    const f = r.variants.find((v) => v.findMax !== null)?.findMax;
    if (f) {
      out +=
        `(probes: ${f.warmupMs / 1000} s warm-up, ${f.durationMs / 1000} s measured; ` +
        '(2): passed or failed on a second try; a search stops at its time budget or its ceiling)\n';
    }
    out += '\n';
  }
  const busy = Math.max(
    0,
    ...r.variants.flatMap((v) => [
      ...v.latency.runs.map((run) => run.foreignCpuPercent),
      ...(v.findMax?.tried ?? []).map((t) => t.foreignCpuPercent),
    ]),
  );
  if (busy > BUSY_MACHINE_PERCENT) {
    out += `warning: other processes used up to ${busy} % of the CPUs before some runs; the figures are noisy\n\n`;
  }
  out +=
    "targets: A1 (batch size 1 beside scalar) and A2 (batch size 10 000's sustainable rate) are read from this table (docs/benchmarks.md)\n";
  if (r.files.length > 0) out += `files:\n${r.files.map((f) => `  ${displayPath(f)}\n`).join('')}`;
  return out;
}
