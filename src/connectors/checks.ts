import { ErrorCode, MillraceError } from '../errors.js';
import { sinkConnector } from './registry.js';
import type { SinkSpec } from './spec.js';

/**
 * Plan-time checks of what the sink can do with the query's trigger and options (its connector's
 * `refusesAsyncProgress` and `checkTrigger`).
 *
 * - Asynchronous progress tracking writes the logs for only some epochs, so a restart may redo
 *   epochs: not with a sink whose exactly-once recovery recognises each epoch.
 * - A real-time trigger's checkpoint interval is how long an epoch stays open.
 */
export function checkSinkCapabilities(
  sink: SinkSpec,
  checkpointIntervalMs: number | null,
  options: { readonly asyncProgressTracking: boolean },
): void {
  const connector = sinkConnector(sink);
  if (options.asyncProgressTracking) {
    const refused = connector.refusesAsyncProgress?.(sink);
    if (refused !== undefined) throw new MillraceError(ErrorCode.UNSUPPORTED_OPERATION, refused);
  }
  connector.checkTrigger?.(sink, checkpointIntervalMs);
}
