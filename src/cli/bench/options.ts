import { parseArgs } from 'node:util';
import type { CommonOptions } from '../../bench/types.js';
import { MillraceError } from '../../errors.js';
import { parseDuration } from '../../util/duration.js';

/** A bad command line: reported with the usage text, exit status 2. */
export class UsageError extends Error {}

/** A rate in rows per second: `100000`, `100k`, `1.5M`. */
export function parseRate(text: string, what: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$/.exec(text);
  const value = m ? Number(m[1]) * (m[2] === '' ? 1 : m[2]!.toLowerCase() === 'k' ? 1e3 : 1e6) : Number.NaN;
  if (!Number.isFinite(value) || value < 1) {
    throw new UsageError(
      `${what}: expected a rate in rows per second such as 100000, 100k or 1.5M, got '${text}'`,
    );
  }
  return Math.round(value);
}

/** A duration option (`10s`, `500ms`, `2 minutes`; a bare number is seconds). */
export function parseDurationOption(text: string, what: string): number {
  const value = /^\s*\d+(\.\d+)?\s*$/.test(text) ? `${text} s` : text;
  try {
    return parseDuration(value, what);
  } catch (e) {
    if (e instanceof MillraceError) throw new UsageError(e.message);
    throw e;
  }
}

export function parsePositiveInt(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${what}: expected a positive integer, got '${text}'`);
  return n;
}

export function parseNonNegative(text: string, what: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new UsageError(`${what}: expected a non-negative number, got '${text}'`);
  }
  return n;
}

type OptionSpec = Record<string, { type: 'string' | 'boolean' }>;

/**
 * Parses a latency scenario's command line: the common options, plus the scenario's own `extra`
 * ones, returned as raw values. Without `--rate`/`--rates` the rate is `defaults.rate`, or none
 * when `--find-max` runs alone; the warm-up is `defaults.warmup` (3 s unless given), the measured
 * window `defaults.duration` (10 s unless given).
 */
export function parseBenchArgs(
  args: string[],
  extra: OptionSpec,
  defaults: { rate: number; warmup?: string; duration?: string },
): { common: CommonOptions; values: Record<string, string | boolean | undefined> } {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        rate: { type: 'string' },
        rates: { type: 'string' },
        duration: { type: 'string' },
        warmup: { type: 'string' },
        runs: { type: 'string' },
        'find-max': { type: 'boolean' },
        'max-time': { type: 'string' },
        'spin-micros': { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean' },
        ...extra,
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const text = (k: string) => values[k] as string | undefined;
  const rateList = text('rates');
  const rate = text('rate');
  if (rate !== undefined && rateList !== undefined) throw new UsageError('give --rate or --rates, not both');
  const findMax = values['find-max'] === true;
  let rates: number[] = findMax ? [] : [defaults.rate];
  if (rateList !== undefined) rates = rateList.split(',').map((r) => parseRate(r, '--rates'));
  else if (rate !== undefined) rates = [parseRate(rate, '--rate')];
  const durationMs = parseDurationOption(text('duration') ?? defaults.duration ?? '10s', '--duration');
  if (durationMs <= 0) throw new UsageError('--duration must be positive');
  const spin = text('spin-micros');
  return {
    common: {
      rates,
      durationMs,
      warmupMs: parseDurationOption(text('warmup') ?? defaults.warmup ?? '3s', '--warmup'),
      runs: parsePositiveInt(text('runs') ?? '1', '--runs'),
      findMax,
      maxTimeMs: parseDurationOption(text('max-time') ?? '2min', '--max-time'),
      spinMicros: spin === undefined ? undefined : parseNonNegative(spin, '--spin-micros'),
      outDir: text('out') ?? 'bench-out',
      json: values.json === true,
    },
    values,
  };
}
