import { ErrorCode, MillraceError } from '../errors.js';

/** A duration: milliseconds, or a string such as `'300 milliseconds'`, `'10 s'`, `'1 hour'`. */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

/**
 * Parses a duration into milliseconds. Numbers are milliseconds already. Strings are one or more
 * `<number> <unit>` parts (`'1 hour 30 minutes'`, `'30s'`). Throws `INVALID_DURATION`.
 *
 * @example parseDuration('15 minutes') === 900_000
 */
export function parseDuration(value: Duration, what = 'duration'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) {
      throw new MillraceError(
        ErrorCode.INVALID_DURATION,
        `${what} must be a non-negative number of milliseconds, got ${value}`,
      );
    }
    return value;
  }
  if (typeof value !== 'string') {
    throw new MillraceError(
      ErrorCode.INVALID_DURATION,
      `${what} must be a number of milliseconds or a string like '10 seconds', got ${typeof value}`,
    );
  }
  const text = value.trim().toLowerCase();
  const part = /(\d+(?:\.\d+)?)\s*([a-z]+)/g;
  let total = 0;
  let consumed = 0;
  let matched = false;
  for (let m = part.exec(text); m !== null; m = part.exec(text)) {
    if (text.slice(consumed, m.index).trim() !== '') break;
    const unit = UNIT_MS[m[2]!];
    if (unit === undefined) {
      throw new MillraceError(
        ErrorCode.INVALID_DURATION,
        `${what}: unknown unit '${m[2]}' in '${value}' (use ms, seconds, minutes, hours or days)`,
      );
    }
    total += Number(m[1]) * unit;
    consumed = m.index + m[0].length;
    matched = true;
  }
  if (!matched || text.slice(consumed).trim() !== '') {
    // A number alone is milliseconds only as a number (`500`); as text it needs its unit.
    const bare = /^\d+(\.\d+)?$/.test(text);
    throw new MillraceError(
      ErrorCode.INVALID_DURATION,
      bare
        ? `${what}: '${value}' has no unit: write it with one, e.g. ${text}ms, 30s or 5min`
        : `${what}: cannot read '${value}' as a duration: write a number and a unit, e.g. 500ms, 30s, 5min or '1 hour 30 minutes'`,
    );
  }
  return total;
}

/** Formats milliseconds for messages: `1500` → `'1.5 s'`. */
export function formatDuration(ms: number): string {
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${+ms.toFixed(2)} ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(2)} s`;
  if (ms < 3_600_000) return `${+(ms / 60_000).toFixed(2)} min`;
  return `${+(ms / 3_600_000).toFixed(2)} h`;
}
