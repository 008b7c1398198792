/**
 * The worker side of a sink: what a sink task calls. A returned promise means "wait for me": the
 * task processes nothing else until it settles (the host keeps serving its other tasks).
 */
export interface SinkRuntime {
  write(row: unknown): unknown;
  /** The epoch `epoch` ended on this partition (its barrier arrived). */
  epochEnd(epoch: number): unknown;
  /** The task ends; `error` is null when it ends normally. */
  close(error: Error | null): unknown;
}

export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
