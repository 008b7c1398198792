/** Text formatting for benchmark reports. */

/** A latency given in ms, in the unit that reads best: `21 µs`, `0.48 ms`, `12.3 ms`, `1.20 s`. */
export function formatLatency(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** A signed clock difference given in ms, in µs: `+12 µs`, `−380 µs`. */
export function formatSkew(ms: number): string {
  const us = Math.round(ms * 1000);
  return `${us < 0 ? '−' : '+'}${Math.abs(us)} µs`;
}

/** A rate in rows per second: `2 000`, `100 k`, `1.25 M`. */
export function formatRate(rowsPerSecond: number): string {
  if (rowsPerSecond >= 1_000_000) return `${+(rowsPerSecond / 1_000_000).toFixed(2)} M`;
  if (rowsPerSecond >= 10_000) return `${+(rowsPerSecond / 1000).toFixed(1)} k`;
  return formatCount(rowsPerSecond);
}

/** A size in bytes, in binary units: `512 B`, `23.4 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  if (bytes < 2 ** 20) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 2 ** 30) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

/** An integer with thin groups: `1 234 567`. */
export function formatCount(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

export type Align = 'left' | 'right';

/** A plain-text table: a header line, a rule, the rows; columns padded to their widest cell. */
export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  align: readonly Align[],
): string {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (align[c] === 'right' ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n') + '\n';
}

/** Median of a non-empty list. */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return Number.NaN;
  return n % 2 === 1 ? s[n >> 1]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}
