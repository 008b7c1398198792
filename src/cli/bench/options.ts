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
