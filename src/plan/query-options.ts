import { invalidArgument } from '../errors.js';
import { type Duration, parseDuration } from '../util/duration.js';
import { checkBatchSize } from './arrow-udf.js';
import { type RestartPolicy, type RestartPolicyInput, resolveRestartPolicy } from './restart-policy.js';
import {
  resolveSideOutputTarget,
  type SideOutputInput,
  type SideOutputTarget,
} from './side-output-target.js';

/**
 * Bounds and default of `ringCapacityBytes`: the bytes in a ring's data area
 * (`runtime/channel/ring-layout.ts`).
 */
export const MIN_RING_CAPACITY = 1024;
export const DEFAULT_RING_CAPACITY = 1 << 20;
/** Positions are 32-bit counters: the capacity must stay well below 2^31. */
export const MAX_RING_CAPACITY = 1 << 30;

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
  /** Threads of the UDF pool that runs Arrow UDFs and `mapInArrow` (started only if the query has them). Default 1. */
  readonly udfWorkers: number;
  /**
   * Rows per Arrow batch at most, for operators that do not set their own `maxRecordsPerBatch`.
   * Default: 1 in real-time mode (lowest latency), 10 000 in micro-batch mode.
   */
  readonly arrowMaxRecordsPerBatch: number | undefined;
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
  /**
   * Restarts a failed query from its checkpoint with exponential backoff (docs/operations.md, "Restart policy"); needs a
   * checkpoint location. Default null: a failure ends the query.
   */
  readonly restartPolicy: RestartPolicy | null;
  /**
   * Named-source evolution (docs/operations.md, "Named sources and offset log v2"). `true`: every source must be named
   * (`UNNAMED_STREAMING_SOURCES_WITH_ENFORCEMENT` otherwise) and the checkpoint keeps offsets by
   * source name (offset log v2), so later runs may reorder, add and remove sources. A checkpoint
   * keeps the format it was created with: v1 and v2 cannot be switched. Default false.
   */
  readonly sourceEvolution: boolean;
  /** Every Arrow UDF and mapInArrow runs on the UDF threads, as if each said `isolate: true`. */
  readonly isolateUdfs: boolean;
  /**
   * Asynchronous progress tracking (Spark's name): the offset and commit logs are written for at
   * most one epoch every `asyncProgressTrackingCheckpointIntervalMs`, off the record path; the
   * epochs in between commit in memory only. A restart after a crash goes on from the last epoch
   * written, so what came after it is processed again (at-least-once for those epochs). Not with
   * the `availableNow` and `once` triggers, nor with the files sink. Default false.
   */
  readonly asyncProgressTracking: boolean;
  /** See {@link asyncProgressTracking}. Default 1000. */
  readonly asyncProgressTrackingCheckpointIntervalMs: number;
  /**
   * Where dead letters are written besides `q.deadLetters()`: a directory of JSON lines or a Kafka
   * topic, at least once (flushed before each epoch commits and before a stop returns). Needs
   * `onBadRecord: 'deadLetter'`. Default null: nowhere.
   */
  readonly deadLetters: SideOutputTarget | null;
  /** Where late rows are written besides `q.lateRows()`, as {@link deadLetters}; needs `onLateRow: 'sideOutput'`. */
  readonly lateRows: SideOutputTarget | null;
  /**
   * The most state, in bytes (the operators' `memoryUsedBytes`), the stateful tasks of one worker
   * thread may hold; over it the query fails with `STATE_MEMORY_EXCEEDED` naming the largest
   * operator, checked at each progress report and each epoch's end. Whatever it says, a worker
   * running stateful tasks also fails so once a full collection leaves its heap over 80 % of its
   * limit (`--max-old-space-size`), instead of dying of heap exhaustion; `Infinity` turns both
   * off. Default undefined: the heap check only.
   */
  readonly stateMemoryLimitBytes: number | undefined;
}

export const DEFAULT_QUERY_OPTIONS: QueryOptions = Object.freeze({
  onBadRecord: 'fail',
  workers: undefined,
  shufflePartitions: undefined,
  ringCapacityBytes: DEFAULT_RING_CAPACITY,
  progressIntervalMs: 1000,
  spinMicros: 50,
  udfWorkers: 1,
  arrowMaxRecordsPerBatch: undefined,
  onLateRow: 'drop',
  multipleWatermarkPolicy: 'min',
  minBatchesToRetain: 100,
  minDeltasForSnapshot: 10,
  restartPolicy: null,
  sourceEvolution: false,
  isolateUdfs: false,
  asyncProgressTracking: false,
  asyncProgressTrackingCheckpointIntervalMs: 1000,
  deadLetters: null,
  lateRows: null,
  stateMemoryLimitBytes: undefined,
});

/** What users may pass: durations as strings, everything optional. */
export interface QueryOptionsInput {
  onBadRecord?: BadRecordPolicy;
  workers?: number;
  shufflePartitions?: number;
  ringCapacityBytes?: number;
  progressInterval?: Duration;
  spinMicros?: number;
  udfWorkers?: number;
  arrowMaxRecordsPerBatch?: number;
  onLateRow?: LateRowPolicy;
  multipleWatermarkPolicy?: 'min' | 'max';
  minBatchesToRetain?: number;
  minDeltasForSnapshot?: number;
  /** See {@link QueryOptions.stateMemoryLimitBytes}; `Infinity` for no limit. */
  stateMemoryLimitBytes?: number;
  /** Any subset of the policy's fields (the rest default); null turns restarts off. */
  restartPolicy?: RestartPolicyInput | null;
  sourceEvolution?: boolean;
  isolateUdfs?: boolean;
  asyncProgressTracking?: boolean;
  /** Milliseconds, or a duration string. */
  asyncProgressTrackingCheckpointIntervalMs?: Duration;
  /** `{ path }` or `{ kafka: { brokers, topic, client? } }`; null: nowhere. */
  deadLetters?: SideOutputInput | null;
  /** `{ path }` or `{ kafka: { brokers, topic, client? } }`; null: nowhere. */
  lateRows?: SideOutputInput | null;
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
      case 'arrowMaxRecordsPerBatch':
        out.arrowMaxRecordsPerBatch = checkBatchSize(value, 'arrowMaxRecordsPerBatch');
        break;
      case 'workers':
      case 'udfWorkers':
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
      case 'stateMemoryLimitBytes':
        if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
          throw invalidArgument(
            `stateMemoryLimitBytes must be a positive number of bytes (Infinity: no limit), got ${JSON.stringify(value)}`,
          );
        }
        out.stateMemoryLimitBytes = value;
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
      case 'sourceEvolution':
        if (typeof value !== 'boolean') {
          throw invalidArgument(`sourceEvolution must be true or false, got ${JSON.stringify(value)}`);
        }
        out.sourceEvolution = value;
        break;
      case 'isolateUdfs':
        if (typeof value !== 'boolean') {
          throw invalidArgument(`isolateUdfs must be true or false, got ${JSON.stringify(value)}`);
        }
        out.isolateUdfs = value;
        break;
      case 'asyncProgressTracking':
        if (typeof value !== 'boolean') {
          throw invalidArgument(`asyncProgressTracking must be true or false, got ${JSON.stringify(value)}`);
        }
        out.asyncProgressTracking = value;
        break;
      case 'asyncProgressTrackingCheckpointIntervalMs': {
        const ms = parseDuration(value as Duration, 'asyncProgressTrackingCheckpointIntervalMs');
        if (ms < 0) throw invalidArgument('asyncProgressTrackingCheckpointIntervalMs must not be negative');
        out.asyncProgressTrackingCheckpointIntervalMs = ms;
        break;
      }
      case 'restartPolicy':
        out.restartPolicy = resolveRestartPolicy(base.restartPolicy, value as RestartPolicyInput | null);
        break;
      case 'deadLetters':
      case 'lateRows':
        out[key] = resolveSideOutputTarget(key, value);
        break;
      default:
        throw invalidArgument(
          `unknown query option '${key}' (known: onBadRecord, onLateRow, multipleWatermarkPolicy, workers, ` +
            'shufflePartitions, ringCapacityBytes, progressInterval, spinMicros, udfWorkers, isolateUdfs, arrowMaxRecordsPerBatch, minBatchesToRetain, minDeltasForSnapshot, ' +
            'sourceEvolution, restartPolicy, asyncProgressTracking, asyncProgressTrackingCheckpointIntervalMs, ' +
            'deadLetters, lateRows, stateMemoryLimitBytes)',
        );
    }
  }
  return Object.freeze(out);
}
