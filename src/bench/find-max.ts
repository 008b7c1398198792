import { formatRate } from './format.js';
import { RateSearch } from './rate-search.js';
import type { BenchIO, SystemRun } from './types.js';

export interface FindMaxResult {
  /** Highest sustainable rate found (0: none). */
  best: number;
  /** Lowest rate found unsustainable (null: none). */
  worst: number | null;
  tried: {
    rate: number;
    sustainable: boolean;
    /** Probes run at this rate (a failed one is repeated once). */
    attempts: number;
    /** p99 and reasons of the last probe. */
    p99: number;
    reasons: string[];
    foreignCpuPercent: number;
  }[];
  warmupMs: number;
  durationMs: number;
}

/**
 * Probes of --find-max are shorter than full runs, but keep a 3-s warm-up: the engine starts a
 * generator's schedule before its worker runs, and the backlog of the first second takes a while
 * to work off.
 */
const PROBE_MAX_WARMUP_MS = 3000;
const PROBE_MAX_DURATION_MS = 2000;
/** Start, stop and worker start-up around each probe, for the time budget. */
const PROBE_OVERHEAD_MS = 1500;
/** Probes run at one rate before it counts as not sustainable. */
const PROBE_ATTEMPTS = 2;

export interface SearchSettings {
  /** The scenario's warm-up and window; probes use at most `maxWarmupMs` and `maxDurationMs` of them. */
  warmupMs: number;
  durationMs: number;
  budgetMs: number;
  /** The first rate tried. */
  start: number;
  /** Default 3 s: see PROBE_MAX_WARMUP_MS. */
  maxWarmupMs?: number;
  /** Default 2 s. */
  maxDurationMs?: number;
  /** Rates tried are multiples of this (default 10 000 rows/s). */
  step?: number;
  /** The highest rate tried (default 20 M rows/s): the search stops once it is sustained. */
  ceiling?: number;
}

/**
 * The highest rate at which a system is sustainable (T1, T2), within a time budget: `probe` runs
 * one measured run at a rate, with a warm-up and a window (ms), and says whether it was sustainable.
 */
export async function searchMaxRate(
  label: string,
  probe: (rate: number, warmupMs: number, durationMs: number) => Promise<SystemRun>,
  s: SearchSettings,
  io: BenchIO,
): Promise<FindMaxResult> {
  const warmupMs = Math.min(s.warmupMs, s.maxWarmupMs ?? PROBE_MAX_WARMUP_MS);
  const durationMs = Math.min(s.durationMs, s.maxDurationMs ?? PROBE_MAX_DURATION_MS);
  const search = new RateSearch(s.start, {
    precision: 0.1,
    floor: 1000,
    ceiling: s.ceiling ?? 20_000_000,
    step: s.step ?? 10_000,
  });
  const tried: FindMaxResult['tried'] = [];
  const started = performance.now();
  const probeMs = warmupMs + durationMs + PROBE_OVERHEAD_MS;
  const timeLeft = () => performance.now() - started + probeMs <= s.budgetMs;
  for (let rate = search.next(); rate !== null; rate = search.next()) {
    if (!timeLeft()) {
      io.err(`find-max: ${label}: time budget spent\n`);
      break;
    }
    // A failed probe is tried once more: noise from the machine only ever makes a run worse, so
    // one sustained probe shows the rate can be sustained; two failures show it cannot.
    let attempts = 0;
    let run: SystemRun | undefined;
    do {
      attempts++;
      io.err(`find-max: ${label} at ${formatRate(rate)} rows/s (attempt ${attempts})\n`);
      run = await probe(rate, warmupMs, durationMs);
    } while (!run.sustainable && attempts < PROBE_ATTEMPTS && timeLeft());
    search.record(rate, run.sustainable);
    tried.push({
      rate,
      sustainable: run.sustainable,
      attempts,
      p99: run.latency.p99,
      reasons: run.reasons,
      foreignCpuPercent: run.foreignCpuPercent,
    });
  }
  return {
    best: search.best,
    worst: search.worst === Number.POSITIVE_INFINITY ? null : search.worst,
    tried,
    warmupMs,
    durationMs,
  };
}
