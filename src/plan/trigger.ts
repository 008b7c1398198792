import { invalidArgument } from '../errors.js';
import { type Duration, parseDuration } from '../util/duration.js';

/**
 * Real-time mode: every row is processed the moment it arrives; the interval is how often the
 * driver cuts an epoch (a checkpoint), not a latency bound.
 */
export interface RealTimeTrigger {
  readonly kind: 'realTime';
  readonly checkpointIntervalMs: number;
}

/** Micro-batch mode: a batch every `intervalMs` when data arrived (0: as soon as the last ended). */
export interface ProcessingTimeTrigger {
  readonly kind: 'processingTime';
  readonly intervalMs: number;
}

/** Micro-batch mode: everything available at start, in as many batches as rate limits demand, then stop. */
export interface AvailableNowTrigger {
  readonly kind: 'availableNow';
}

/** Micro-batch mode: one batch of everything available at start, then stop. */
export interface OnceTrigger {
  readonly kind: 'once';
}

export type MicroBatchTrigger = ProcessingTimeTrigger | AvailableNowTrigger | OnceTrigger;
export type TriggerSpec = RealTimeTrigger | MicroBatchTrigger;

export const DEFAULT_CHECKPOINT_INTERVAL_MS = 5 * 60_000;

export function isMicroBatch(t: TriggerSpec): t is MicroBatchTrigger {
  return t.kind !== 'realTime';
}

export const Trigger = Object.freeze({
  /**
   * Record-at-a-time execution with an epoch barrier every `checkpointInterval` (default 5 minutes).
   *
   * @example writer.trigger(Trigger.realTime('10 seconds'))
   */
  realTime(checkpointInterval: Duration = DEFAULT_CHECKPOINT_INTERVAL_MS): RealTimeTrigger {
    const ms = parseDuration(checkpointInterval, 'Trigger.realTime(checkpointInterval)');
    if (ms <= 0)
      throw invalidArgument(`Trigger.realTime: the checkpoint interval must be positive, got ${ms} ms`);
    return Object.freeze({ kind: 'realTime', checkpointIntervalMs: ms });
  },

  /**
   * Micro-batches: every `interval` (by the query's clock) a batch takes the data that arrived; with
   * 0 the next batch starts as soon as the previous one ends and new data exists.
   *
   * @example writer.trigger(Trigger.processingTime('10 seconds'))
   */
  processingTime(interval: Duration): ProcessingTimeTrigger {
    return Object.freeze({
      kind: 'processingTime',
      intervalMs: parseDuration(interval, 'Trigger.processingTime'),
    });
  },

  /**
   * Processes everything available when the query starts, in as many batches as the sources' rate
   * limits demand (plus a last batch with no data when the watermark closed windows), then stops.
   */
  availableNow(): AvailableNowTrigger {
    return Object.freeze({ kind: 'availableNow' });
  },

  /** One batch of everything available when the query starts, then stop. */
  once(): OnceTrigger {
    return Object.freeze({ kind: 'once' });
  },
});
