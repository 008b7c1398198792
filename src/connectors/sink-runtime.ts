/**
 * The worker side of a sink: what a sink task calls. A returned promise means "wait for me": the
 * task processes nothing else until it settles (the host keeps serving its other tasks).
 */
export interface SinkRuntime {
  /** Takes a row; `sourceTime` is when its source row came in (wall-clock ms, as latency counts it). */
  write(row: unknown, sourceTime: number): unknown;
  /**
   * The epoch `epoch` ended on this partition (its barrier arrived). A sink that commits through the
   * driver (the files sink's manifest) returns what the driver needs to know (the files written);
   * the epoch is acknowledged once the returned promise settles.
   */
  epochEnd(epoch: number): SinkCommitMessage | undefined | PromiseLike<SinkCommitMessage | undefined>;
  /**
   * The task's watermark of input `input` (its `withWatermark` operators, in plan order) moved to
   * `value`. A sink that passes watermarks on (a repartition topic's) takes them here; others stop
   * them.
   */
  watermark?(input: number, value: number): void;
  /** The task ends; `error` is null when it ends normally. */
  close(error: Error | null): unknown;
  /**
   * The driver logged epoch `epoch` (its offsets are durable) and asks the sink to commit it: a
   * sink holding the epoch's output open (a Kafka transaction) commits it now. Called in epoch
   * order, after `epochEnd(epoch)`; the driver writes the epoch's commit file once it resolves.
   */
  commitEpoch?(epoch: number): Promise<void> | undefined;
  /**
   * A `processAllAvailable` probe reached this partition: a sink that writes in the background
   * returns a promise that settles once what it was given is written (the probe waits for it).
   */
  flush?(): unknown;
  /**
   * A sink that works in the background (sends rows after `write` returned) registers here to
   * fail its task when that work fails, instead of waiting for the next row or epoch to tell.
   */
  onBackgroundError?(fail: (error: Error) => void): void;
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
