/**
 * The worker side of a sink: what a sink task calls. A returned promise means "wait for me": the
 * task processes nothing else until it settles (the host keeps serving its other tasks).
 */
export interface SinkRuntime {
  write(row: unknown): unknown;
  /**
   * The epoch `epoch` ended on this partition (its barrier arrived). A sink that commits through the
   * driver (the files sink's manifest) returns what the driver needs to know (the files written);
   * the epoch is acknowledged once the returned promise settles.
   */
  epochEnd(epoch: number): SinkCommitMessage | undefined | PromiseLike<SinkCommitMessage | undefined>;
  /** The task ends; `error` is null when it ends normally. */
  close(error: Error | null): unknown;
}

/** What one sink partition tells the driver about an epoch it finished (plain data). */
export type SinkCommitMessage = Record<string, unknown>;

/** A sink partition's report of an epoch, on its way to the driver's commit. */
export interface SinkCommit {
  readonly epoch: number;
  readonly partition: number;
  readonly message: SinkCommitMessage;
}

export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
