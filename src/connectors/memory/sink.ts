import type { MemorySinkSpec } from '../spec.js';
import { checkName } from '../validate.js';

export interface MemorySinkOptions {
  /** How tests address the sink: `q.sink(name).rows()`. */
  name: string;
}

/**
 * Keeps every row the query writes, readable from the test through `q.sink(name).rows()` (emit
 * order per partition) and `q.sink(name).epochs()` (grouped by epoch). Rows stay readable after
 * the query stops.
 */
export function memorySink(options: MemorySinkOptions): MemorySinkSpec {
  const name = checkName('sinks.memory', options?.name, true)!;
  return Object.freeze({
    kind: 'memory',
    name,
    description: `MemorySink[${name}]`,
    supportedModes: Object.freeze(['append', 'update', 'complete'] as const),
  });
}
