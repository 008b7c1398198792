import type { MemorySourceSpec } from '../spec.js';
import { checkName, checkPositiveInt, checkRateLimit } from '../validate.js';

export interface MemorySourceOptions {
  /** How tests address the source: `q.source(name).addData(rows)`. */
  name: string;
  /** Number of partitions (default 1). `addData(rows, partition)` picks one. */
  partitions?: number;
  /** Micro-batch mode: at most this many rows per batch (default: all that are available). */
  maxRowsPerTrigger?: number;
}

/**
 * A replayable in-memory source for tests: rows appended from the test with
 * `q.source(name).addData(rows, partition?)`. Offsets are row numbers per partition.
 *
 * @example
 * job.readStream(sources.memory<Payment>({ name: 'payments', partitions: 2 }))
 */
export function memorySource<T = unknown>(options: MemorySourceOptions): MemorySourceSpec<T> {
  const name = checkName('sources.memory', options?.name, true)!;
  const partitions = checkPositiveInt('sources.memory: partitions', options.partitions ?? 1);
  return Object.freeze({
    kind: 'memory',
    name,
    partitions,
    maxRowsPerTrigger: checkRateLimit('sources.memory', options.maxRowsPerTrigger),
    description: `MemoryStream[${name}]`,
  });
}
