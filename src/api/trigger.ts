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

export type TriggerSpec = RealTimeTrigger;

export const DEFAULT_CHECKPOINT_INTERVAL_MS = 5 * 60_000;

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
});
