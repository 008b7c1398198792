import type { Duration } from '../../util/duration.js';
import { parseDuration } from '../../util/duration.js';
import type { GeneratorSourceSpec } from '../spec.js';
import { checkName, checkPositiveInt, checkPositiveNumber, checkRateLimit } from '../validate.js';

export interface RateSourceOptions {
  name?: string;
  /** Rows per second over all partitions (default 1). */
  rowsPerSecond?: number;
  /** Number of partitions (default 1). */
  numPartitions?: number;
  /** Linear ramp from 0 to the full rate (default none). */
  rampUpTime?: Duration;
  /** Micro-batch mode: at most this many rows per batch (default: all that are due). */
  maxRowsPerTrigger?: number;
}

/** A row of the rate source: its scheduled time (ms since the epoch) and a global sequence number. */
export interface RateRow {
  timestamp: number;
  value: number;
}

/**
 * Spark's rate source: `{ timestamp, value }` rows at `rowsPerSecond` over `numPartitions`.
 * `value` counts up across partitions (row i of partition p has value `i * numPartitions + p`).
 */
export function rateSource(options: RateSourceOptions = {}): GeneratorSourceSpec<RateRow> {
  const name = checkName('sources.rate', options.name, false);
  const rowsPerSecond = checkPositiveNumber('sources.rate: rowsPerSecond', options.rowsPerSecond ?? 1);
  const partitions = checkPositiveInt('sources.rate: numPartitions', options.numPartitions ?? 1);
  const rampUpTimeMs = parseDuration(options.rampUpTime ?? 0, 'sources.rate: rampUpTime');
  return Object.freeze({
    kind: 'rate',
    name,
    partitions,
    rowsPerSecond,
    rampUpTimeMs,
    maxRowsPerTrigger: checkRateLimit('sources.rate', options.maxRowsPerTrigger),
    generate: (partition: number, offset: number, scheduledTimeMs: number): RateRow => ({
      timestamp: scheduledTimeMs,
      value: offset * partitions + partition,
    }),
    description: `RateStreamV2[rowsPerSecond=${rowsPerSecond}, rampUpTimeSeconds=${rampUpTimeMs / 1000}, numPartitions=${partitions}]`,
  });
}
