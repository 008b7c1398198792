/**
 * Metadata of the row a task is processing: where it came from and when. Set once per input
 * frame; outputs copy it into the frames they write. One mutable object per task, so the hot path
 * allocates nothing for it.
 */
export class RowMeta {
  /** Wall-clock ms of the row at its source (Kafka timestamp, scheduled time, addData time). */
  sourceTime = 0;
  /** Wall-clock ms when the source reader handed the row to the engine. */
  readTime = 0;
  /** The row's offset in its source partition. */
  origin = -1;
  sourceIndex = 0;
  sourcePartition = 0;
}

/** The tag argument of a DATA frame: which source and source partition the row came from. */
export function originArg(meta: RowMeta): number {
  return (meta.sourceIndex << 16) | meta.sourcePartition;
}

export function readOriginArg(meta: RowMeta, arg: number): void {
  meta.sourceIndex = arg >>> 16;
  meta.sourcePartition = arg & 0xffff;
}
