import { type Channel, channel } from 'node:diagnostics_channel';

/**
 * The engine's `node:diagnostics_channel` channels (docs/operations.md, "Diagnostics channels").
 * A message is built only when a channel has subscribers: with none, publishing costs one check.
 */
export const DIAGNOSTICS_CHANNELS = Object.freeze({
  /** A run of a query started (each attempt under a restart policy too). */
  queryStart: channel('millrace:query:start'),
  /** The query stopped (`error` null) or failed (`error` the MillraceError). */
  queryEnd: channel('millrace:query:end'),
  /** An attempt failed and the query restarts from its checkpoint after `backoffMs`. */
  queryRestart: channel('millrace:query:restart'),
  /** An epoch (a micro-batch) committed: its output is durable, its checkpoint written when there is one. */
  epochCommit: channel('millrace:epoch:commit'),
  /** A row user code or decoding failed on went to the dead letters (`onBadRecord: 'deadLetter'`). */
  badRecord: channel('millrace:row:bad'),
  /** A row arrived behind the watermark (`onLateRow: 'sideOutput'`). */
  lateRow: channel('millrace:row:late'),
});

/** Publishes `make()` on `ch` when someone listens; otherwise builds nothing. */
export function publish(ch: Channel, make: () => unknown): void {
  if (ch.hasSubscribers) ch.publish(make());
}
