import { formatLatency, formatRate } from './format.js';

/** One figure checked against its target (docs/benchmarks.md, "Targets"). */
export interface TargetCheck {
  id: 'E1' | 'E2' | 'E3' | 'E4' | 'T1' | 'T2' | 'I1' | 'C1' | 'K1' | 'K2' | 'D1' | 'D2' | 'D3';
  what: string;
  measured: number;
  unit: 'ms' | 'rows/s' | '%' | '×';
  comparison: '<=' | '>=';
  target: number;
  /** measured / target: at most 1 passes a `<=` target, at least 1 a `>=` one. */
  ratio: number;
  pass: boolean;
  /** What the reader should know about the figure (e.g. the clock skew it includes). */
  note?: string;
}

export function check(
  id: TargetCheck['id'],
  what: string,
  measured: number,
  unit: TargetCheck['unit'],
  comparison: TargetCheck['comparison'],
  target: number,
): TargetCheck {
  const pass = comparison === '<=' ? measured <= target : measured >= target;
  return { id, what, measured, unit, comparison, target, ratio: measured / target, pass };
}

/** E1 is defined at this rate. */
export const E1_RATE = 100_000;
export const E1_P50_MS = 0.05;
export const E1_P99_MS = 0.5;
export const E1_P999_MS = 2;
/** Millrace's p99 at most this fraction of the postMessage pipeline's. */
export const E1_VS_BASELINE = 0.5;
export const T1_ROWS_PER_SECOND = 1_000_000;
/** E2 (keyed 1-s tumbling count, update mode) is defined at this rate. */
export const E2_RATE = 100_000;
export const E2_P99_MS = 1;
export const E2_P999_MS = 5;
/** E3: E2 with a checkpoint every second and ≈ 1 M keys of state. */
export const E3_RATE = 100_000;
export const E3_KEYS = 1_000_000;
export const E3_CHECKPOINT_INTERVAL_MS = 1000;
/** p99 with checkpoints at most this many times p99 without, same query, same state size. */
export const E3_P99_RATIO = 1.25;
/** C1: a query restarted from a checkpoint holding ≈ 1 M keys runs again within this time. */
export const C1_RESTART_MS = 2000;
/** E4: the fraud detector (transformWithState with event-time timers) is defined at this rate. */
export const E4_RATE = 50_000;
export const E4_P99_MS = 2;
/** Keyed window count sustainable throughput. */
export const T2_ROWS_PER_SECOND = 300_000;
export const I1_CPU_PERCENT = 2;

export function formatValue(value: number, unit: TargetCheck['unit']): string {
  switch (unit) {
    case 'ms':
      return formatLatency(value);
    case 'rows/s':
      return `${formatRate(value)} rows/s`;
    case '%':
      return `${value.toFixed(2)} %`;
    case '×':
      return `${value.toFixed(2)}×`;
  }
}

/** K1 (Kafka in the loop, stateless) and K2 (Kafka in the loop, windowed count) are defined at this rate. */
export const K_RATE = 10_000;
export const K1_P99_MS = 2;
export const K2_P99_MS = 5;
