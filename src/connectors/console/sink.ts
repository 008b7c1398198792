import { invalidArgument } from '../../errors.js';
import type { ConsoleSinkSpec } from '../spec.js';

export interface ConsoleSinkOptions {
  /** `json` (default): one JSON object a line. `pretty`: `key=value` pairs. */
  format?: 'json' | 'pretty';
  /** Printed before every row. */
  prefix?: string;
  /** `stdout` (default) or `stderr`. */
  stream?: 'stdout' | 'stderr';
}

/** Prints every row as it arrives (debugging, demos). No delivery guarantee. */
export function consoleSink(options: ConsoleSinkOptions = {}): ConsoleSinkSpec {
  const format = options.format ?? 'json';
  if (format !== 'json' && format !== 'pretty') {
    throw invalidArgument(`sinks.console: format must be 'json' or 'pretty', got ${JSON.stringify(format)}`);
  }
  const stream = options.stream ?? 'stdout';
  if (stream !== 'stdout' && stream !== 'stderr') {
    throw invalidArgument(
      `sinks.console: stream must be 'stdout' or 'stderr', got ${JSON.stringify(stream)}`,
    );
  }
  return Object.freeze({
    kind: 'console',
    format,
    prefix: options.prefix ?? '',
    stream,
    description: 'ConsoleSink',
    supportedModes: Object.freeze(['append', 'update', 'complete'] as const),
  });
}
