/**
 * Kinds of frames travelling on rings (the low 8 bits of a frame's tag). Data rows and control
 * markers share one ring so markers keep their place in the stream (in-band).
 */
export const FrameKind = {
  /** Filler to the end of the data area; never seen by ring users. */
  PAD: 0,
  /** A row: `[sourceTime f64][readTime f64][origin f64][msgpack row]`; arg = source partition. */
  DATA: 1,
  /**
   * Event-time watermark of one input: `[watermarkMs f64]`; arg = the watermark input's index, with
   * {@link WATERMARK_ARG_BEHIND} when the task that runs the watermark operator still has input of
   * its source partition to read.
   */
  WATERMARK: 2,
  /** Epoch barrier: `[epochId f64]`. Aligned at tasks with several inputs. */
  BARRIER: 3,
  /** End of stream: the producer will write nothing more. No payload. */
  END_OF_STREAM: 4,
  /** processAllAvailable probe: `[flushId f64]`. Counted, not aligned. */
  FLUSH: 5,
  /** A row that user code could not handle, sent to the driver: `[msgpack dead letter]`. */
  DEAD_LETTER: 6,
  /** A row that arrived behind the watermark, sent to the driver when the query asks: `[msgpack]`. */
  LATE_ROW: 7,
  /**
   * Micro-batch end, driver → source task: `[epoch f64][endOffset f64]`. The source reads up to
   * `endOffset` (a generator makes the rows), then treats the frame as `BARRIER(epoch)`.
   */
  BATCH: 8,
  /** A stateful task's account of a finished epoch, task → driver: `[msgpack StateReport]`. */
  STATE_REPORT: 9,
  /**
   * Where a source partition stood at an epoch's end, task → driver: `[epoch f64][offset f64]`;
   * arg = source index << 16 | partition.
   */
  SOURCE_OFFSET: 10,
  /** A stateful task's state of an epoch is durable in the checkpoint, task → driver: `[epoch f64]`. */
  STATE_WRITTEN: 11,
  /** What a sink partition wrote in an epoch, for the driver's commit, task → driver: `[msgpack]`. */
  SINK_COMMIT: 12,
  /** A UDF thread could not run a batch, UDF thread → task: `[msgpack SerializedError]`. */
  UDF_ERROR: 13,
  /**
   * Driver → source task: whether the partition has input the driver has not sent yet, `[1 | 0]`
   * (a backlog after a restart, a Kafka partition behind its high watermark). The task's watermark
   * reports say so downstream, where a partition that lags holds the watermark back.
   */
  SOURCE_BACKLOG: 14,
  /**
   * A source partition's own watermark at an epoch's end, task → driver (real-time mode, from a
   * source task that runs the watermark operator): `[epoch f64][watermarkMs f64]`; arg = source
   * index << 16 | partition, with {@link SOURCE_WATERMARK_ARG_BEHIND} when the partition was behind.
   * The commit records what held the watermark back (`millrace checkpoint inspect`).
   */
  SOURCE_WATERMARK: 15,
  /**
   * Source task → the tasks that keep a watermark per source partition (a `withWatermark` just
   * after a `union` or `repartition` of sources): whether the task's partition has input it has
   * not read yet, `[1 | 0]`, sent when that changes (WatermarkTracker.channelBacklog).
   */
  BACKLOG: 16,
} as const;

export type FrameKind = (typeof FrameKind)[keyof typeof FrameKind];

/**
 * DATA arg flag, driver → files source task: the frame holds a record the source could not read
 * as a row (a `BadRecordFrame`: file, line, text, reason), which the task hands to the query's
 * `onBadRecord` policy. Source tasks read no partition from the arg, so the flag is theirs.
 */
export const DATA_ARG_BAD_RECORD = 1 << 22;

/**
 * WATERMARK arg flag: the source partition of the task that sent it has input it has not read yet,
 * so its value holds the watermark back (see WatermarkTracker). The rest of the arg is the input.
 */
export const WATERMARK_ARG_BEHIND = 1 << 22;
export const WATERMARK_ARG_INPUT_MASK = WATERMARK_ARG_BEHIND - 1;

/** SOURCE_WATERMARK arg flag: the partition had input it had not read yet. */
export const SOURCE_WATERMARK_ARG_BEHIND = 1 << 22;
/** The source index and partition of a SOURCE_OFFSET or SOURCE_WATERMARK arg. */
export const SOURCE_ARG_MASK = SOURCE_WATERMARK_ARG_BEHIND - 1;

/** Byte size of the fixed metadata that precedes the encoded row in a DATA frame. */
export const DATA_PREFIX_BYTES = 24;
/** Float64 offsets of the DATA prefix fields, relative to the payload start / 8. */
export const DATA_SOURCE_TIME_FIELD = 0;
export const DATA_READ_TIME_FIELD = 1;
export const DATA_ORIGIN_FIELD = 2;

/** Byte size of a marker payload (one Float64). */
export const MARKER_PAYLOAD_BYTES = 8;

export function frameKindName(kind: number): string {
  for (const [name, value] of Object.entries(FrameKind)) if (value === kind) return name;
  return `UNKNOWN(${kind})`;
}
