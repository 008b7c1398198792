import type { LatencyKind, LatencySummary } from '../metrics/latency.js';
import type { StreamingQueryProgress } from '../metrics/progress.js';

export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Milliseconds with a precision that suits their size. */
export function formatMs(ms: number): string {
  if (ms < 1) return ms.toFixed(3);
  if (ms < 100) return ms.toFixed(2);
  return ms.toFixed(0);
}

/** The live status text of a running query. */
export function progressStatus(p: StreamingQueryProgress, extra = ''): string {
  const e2e = p.latencyMs.e2e;
  return (
    `${formatCount(p.inputRowsPerSecond)} rows/s · e2e p50 ${formatMs(e2e.p50)} ms p99 ${formatMs(e2e.p99)} ms` +
    ` · out ${formatCount(p.sink.numOutputRows)} · epoch ${p.batchId}${heldBack(p)}${extra}`
  );
}

/**
 * Which source partition holds the watermark back, and by how much (docs/semantics.md: a partition
 * that lags holds the watermark back), or nothing.
 */
function heldBack(p: StreamingQueryProgress): string {
  for (const s of p.sources) {
    const partition = s.metrics?.watermarkHeldByPartition;
    if (partition === undefined) continue;
    const ms = s.metrics?.watermarkHeldBackMs;
    const by = ms === undefined ? '' : ` ${formatMs(ms / 1000)} s back`;
    return ` · watermark held${by} by ${s.description} partition ${partition}`;
  }
  return '';
}

const COLUMNS: [keyof LatencySummary, string][] = [
  ['p50', 'p50'],
  ['p90', 'p90'],
  ['p99', 'p99'],
  ['p999', 'p99.9'],
  ['p9999', 'p99.99'],
  ['max', 'max'],
];

/** A small table of whole-run latency percentiles, in ms. */
export function latencyTable(summary: Record<LatencyKind, LatencySummary>, kinds: LatencyKind[]): string {
  const head = ['latency (ms)'.padEnd(14), ...COLUMNS.map(([, label]) => label.padStart(9))].join('');
  const rows = kinds.map((k) =>
    [k.padEnd(14), ...COLUMNS.map(([key]) => formatMs(summary[k][key]).padStart(9))].join(''),
  );
  return [head, ...rows].join('\n');
}
