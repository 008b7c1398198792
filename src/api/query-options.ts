import { invalidArgument } from '../errors.js';
import {
  DEFAULT_RING_CAPACITY,
  MAX_RING_CAPACITY,
  MIN_RING_CAPACITY,
} from '../runtime/channel/ring-layout.js';
import { type Duration, parseDuration } from '../util/duration.js';

/** What happens to a row that user code throws on. */
export type BadRecordPolicy = 'fail' | 'skip' | 'deadLetter';

/** What happens to a row that reaches a stateful operator behind the watermark. */
export type LateRowPolicy = 'drop' | 'sideOutput';

/** Settings of one query; every field has a default. */
export interface QueryOptions {
  /**
   * `fail` (default): the query stops with the error. `skip`: the row is dropped and counted.
   * `deadLetter`: the row, the error and where it happened go to the query's dead letters
   * (`q.deadLetters()`, the `deadLetter` event), and are counted.
   */
  readonly onBadRecord: BadRecordPolicy;
  /** Worker threads. Default: the machine's cores, and never more than the query has tasks. */
  readonly workers: number | undefined;
  /** Partitions after a shuffle when `repartition` does not say. Default: the number of workers. */
  readonly shufflePartitions: number | undefined;
  /** Bytes in each ring between tasks (bounds memory and queueing). Default 1 MiB. */
  readonly ringCapacityBytes: number;
  /** How often a progress object is produced. Default 1 s. */
  readonly progressIntervalMs: number;
  /** How long an idle worker polls before it parks (µs). Default 50. */
  readonly spinMicros: number;
  /**
   * Late rows (at or below the watermark at a stateful operator) are counted in
   * `numRowsDroppedByWatermark` and dropped (default), or also sent to the query's late-row output
   * (`q.lateRows()`, the `lateRow` event) with `'sideOutput'`.
   */
  readonly onLateRow: LateRowPolicy;
  /** How several watermarked inputs combine: the minimum (default) or the maximum. */
  readonly multipleWatermarkPolicy: 'min' | 'max';
  /** Epochs of offset and commit logs a checkpoint keeps (Spark's `minBatchesToRetain`). Default 100. */
  readonly minBatchesToRetain: number;
  /** A full state snapshot every this many epochs, changelogs in between (Spark's name). Default 10. */
  readonly minDeltasForSnapshot: number;
}

export const DEFAULT_QUERY_OPTIONS: QueryOptions = Object.freeze({
  onBadRecord: 'fail',
  workers: undefined,
  shufflePartitions: undefined,
  ringCapacityBytes: DEFAULT_RING_CAPACITY,
  progressIntervalMs: 1000,
  spinMicros: 50,
  onLateRow: 'drop',
  multipleWatermarkPolicy: 'min',
  minBatchesToRetain: 100,
  minDeltasForSnapshot: 10,
});

/** What users may pass: durations as strings, everything optional. */
export interface QueryOptionsInput {
  onBadRecord?: BadRecordPolicy;
  workers?: number;
  shufflePartitions?: number;
  ringCapacityBytes?: number;
  progressInterval?: Duration;
  spinMicros?: number;
  onLateRow?: LateRowPolicy;
  multipleWatermarkPolicy?: 'min' | 'max';
  minBatchesToRetain?: number;
  minDeltasForSnapshot?: number;
}

const POLICIES: readonly BadRecordPolicy[] = ['fail', 'skip', 'deadLetter'];

export function resolveQueryOptions(base: QueryOptions, input: QueryOptionsInput): QueryOptions {
  const out: { -readonly [K in keyof QueryOptions]: QueryOptions[K] } = { ...base };
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    switch (key) {
      case 'onBadRecord':
        if (!POLICIES.includes(value as BadRecordPolicy)) {
          throw invalidArgument(
            `onBadRecord must be one of ${POLICIES.join(', ')}, got ${JSON.stringify(value)}`,
          );
        }
        out.onBadRecord = value as BadRecordPolicy;
        break;
      case 'workers':
      case 'shufflePartitions':
      case 'minBatchesToRetain':
      case 'minDeltasForSnapshot':
        if (!Number.isInteger(value) || (value as number) < 1) {
          throw invalidArgument(`${key} must be a positive integer, got ${JSON.stringify(value)}`);
        }
        out[key] = value as number;
        break;
      case 'ringCapacityBytes':
        if (
          !Number.isInteger(value) ||
          (value as number) < MIN_RING_CAPACITY ||
          (value as number) > MAX_RING_CAPACITY
        ) {
          throw invalidArgument(
            `ringCapacityBytes must be an integer between ${MIN_RING_CAPACITY} and ${MAX_RING_CAPACITY}, got ${JSON.stringify(value)}`,
          );
        }
        out.ringCapacityBytes = value as number;
        break;
      case 'progressInterval': {
        const ms = parseDuration(value as Duration, 'progressInterval');
        if (ms <= 0) throw invalidArgument('progressInterval must be positive');
        out.progressIntervalMs = ms;
        break;
      }
      case 'spinMicros':
        if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
          throw invalidArgument(`spinMicros must be a non-negative number, got ${JSON.stringify(value)}`);
        }
        out.spinMicros = value;
        break;
      case 'onLateRow':
        if (value !== 'drop' && value !== 'sideOutput') {
          throw invalidArgument(`onLateRow must be 'drop' or 'sideOutput', got ${JSON.stringify(value)}`);
        }
        out.onLateRow = value;
        break;
      case 'multipleWatermarkPolicy':
        if (value !== 'min' && value !== 'max') {
          throw invalidArgument(
            `multipleWatermarkPolicy must be 'min' or 'max', got ${JSON.stringify(value)}`,
          );
        }
        out.multipleWatermarkPolicy = value;
        break;
      default:
        throw invalidArgument(
          `unknown query option '${key}' (known: onBadRecord, onLateRow, multipleWatermarkPolicy, workers, ` +
            'shufflePartitions, ringCapacityBytes, progressInterval, spinMicros, minBatchesToRetain, minDeltasForSnapshot)',
        );
    }
  }
  return Object.freeze(out);
}
