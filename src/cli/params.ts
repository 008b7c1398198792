import { ErrorCode, MillraceError } from '../errors.js';

/** Reads `--param k=v` values into a record. */
export function parseParams(values: readonly string[] | undefined): Record<string, string> {
  const params: Record<string, string> = {};
  for (const kv of values ?? []) {
    const eq = kv.indexOf('=');
    if (eq <= 0) {
      throw new MillraceError(ErrorCode.USAGE, `--param expects key=value, got '${kv}'`);
    }
    params[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return params;
}
