import { type Duration, parseDuration } from '../../util/duration.js';
import type { GeneratorSourceSpec } from '../spec.js';
import {
  checkFunction,
  checkName,
  checkPositiveInt,
  checkPositiveNumber,
  checkRateLimit,
} from '../validate.js';

export interface GeneratorSourceOptions<T> {
  name?: string;
  /** Total rate over all partitions. */
  rowsPerSecond: number;
  /** Number of partitions (default 1); each produces `rowsPerSecond / partitions`. */
  partitions?: number;
  /** Linear ramp from 0 to the full rate over this duration (default none). */
  rampUpTime?: Duration;
  /**
   * Makes row number `offset` of `partition`. Must be deterministic (the source is replayed from
   * checkpointed offsets). `scheduledTimeMs` is when the row is due, by the query's clock.
   */
  generate: (partition: number, offset: number, scheduledTimeMs: number) => T;
  /** Micro-batch mode: at most this many rows per batch (default: all that are due). */
  maxRowsPerTrigger?: number;
}

/**
 * Rows from a deterministic function at a constant rate. Each row is stamped with its *scheduled*
 * time, and end-to-end latency is measured from it, so a stall anywhere counts against latency
 * (no coordinated omission).
 *
 * @example
 * sources.generator({ rowsPerSecond: 10_000, partitions: 2,
 *   generate: (p, i, t) => ({ id: `${p}-${i}`, ts: t }) })
 */
export function generatorSource<T>(options: GeneratorSourceOptions<T>): GeneratorSourceSpec<T> {
  const name = checkName('sources.generator', options?.name, false);
  const rowsPerSecond = checkPositiveNumber('sources.generator: rowsPerSecond', options.rowsPerSecond);
  const partitions = checkPositiveInt('sources.generator: partitions', options.partitions ?? 1);
  const rampUpTimeMs = parseDuration(options.rampUpTime ?? 0, 'sources.generator: rampUpTime');
  checkFunction('sources.generator: generate', options.generate);
  return Object.freeze({
    kind: 'generator',
    name,
    partitions,
    rowsPerSecond,
    rampUpTimeMs,
    generate: options.generate,
    maxRowsPerTrigger: checkRateLimit('sources.generator', options.maxRowsPerTrigger),
    description: `Generator[${name ?? 'unnamed'}, rowsPerSecond=${rowsPerSecond}, partitions=${partitions}]`,
  });
}
