import { ErrorCode, MillraceError } from '../errors.js';
import { toEventTime } from '../util/event-time.js';
import type { OperatorContext, OperatorRef } from './contract.js';

/**
 * The time in `column` of `row` (ms since the epoch), or NaN once the row has been handed to the
 * bad-record policy: it has no value there, or one that is neither a number of ms nor a Date.
 * `role` names the column in the message (`'event time'`, `'join time'`).
 */
export function rowTime(
  row: unknown,
  column: string,
  op: OperatorRef,
  ctx: OperatorContext,
  role: string,
): number {
  const raw = (row as Record<string, unknown> | null)?.[column];
  const t = raw == null ? Number.NaN : toEventTime(raw);
  if (Number.isNaN(t)) {
    ctx.badRecord(
      op,
      row,
      new MillraceError(
        ErrorCode.INVALID_ROW,
        `${role} column '${column}' holds ${JSON.stringify(raw)}: expected ms since the epoch or a Date`,
      ),
    );
  }
  return t;
}
