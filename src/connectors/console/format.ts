import type { ConsoleSinkSpec } from '../spec.js';

/** Formats rows for the console sink. */
export function formatConsoleRow(spec: ConsoleSinkSpec, row: unknown): string {
  if (spec.format === 'json') return spec.prefix + safeJson(row);
  if (typeof row !== 'object' || row === null) return spec.prefix + String(row);
  const parts = Object.entries(row as Record<string, unknown>).map(
    ([k, v]) => `${k}=${typeof v === 'object' && v !== null ? safeJson(v) : String(v)}`,
  );
  return spec.prefix + parts.join(' ');
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)) ?? String(v);
  } catch {
    return String(v);
  }
}
