import { ErrorCode, invalidArgument, MillraceError } from '../errors.js';
import { NAME_PATTERN } from './spec.js';

/** Checks a source or sink name against `[a-zA-Z0-9_]+`. */
export function checkName(what: string, name: unknown, required: boolean): string | undefined {
  if (name === undefined && !required) return undefined;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new MillraceError(
      ErrorCode.INVALID_SOURCE_NAME,
      `${what}: name must match [a-zA-Z0-9_]+ (letters, digits, underscore), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

export function checkPositiveInt(what: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalidArgument(`${what} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function checkPositiveNumber(what: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`${what} must be a positive number, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Reads an optional `maxRowsPerTrigger` option. */
export function checkRateLimit(what: string, value: unknown): number | undefined {
  return value === undefined ? undefined : checkPositiveInt(`${what}: maxRowsPerTrigger`, value);
}

export function checkFunction(what: string, value: unknown): void {
  if (typeof value !== 'function') throw invalidArgument(`${what} must be a function, got ${typeof value}`);
}
