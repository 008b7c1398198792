import type { BenchIO, CommonOptions } from '../../src/bench/types.js';

/** A BenchIO that keeps the progress lines a benchmark writes. */
export function progressIO(): BenchIO & { stderr: () => string } {
  const err: string[] = [];
  return {
    err: (t) => void err.push(t),
    stderr: () => err.join(''),
  };
}

/**
 * The options of a smoke run of a latency scenario: one rate of 2 000 rows/s, a 1-s window after
 * 0.3 s of warm-up, files under `outDir`; `o` overrides any of them.
 */
export function smokeRun(outDir: string, o: Partial<CommonOptions> = {}): CommonOptions {
  return {
    rates: [2000],
    durationMs: 1000,
    warmupMs: 300,
    runs: 1,
    findMax: false,
    maxTimeMs: 120_000,
    spinMicros: undefined,
    outDir,
    json: true,
    ...o,
  };
}

/** A signal no test aborts. */
export const NEVER: AbortSignal = new AbortController().signal;
