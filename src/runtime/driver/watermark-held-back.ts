/** A source partition's own watermark (its largest event time − delay) and whether it is behind. */
export interface PartitionWatermark {
  readonly value: number;
  /** The partition has input it has not read yet. */
  readonly behind: boolean;
}

/** What holds a source's watermark back: its progress metrics, and the commit's record. */
export interface WatermarkHeldBack {
  readonly partitionsBehind: number;
  readonly watermarkHeldByPartition: number;
  /** How far it trails the partition furthest ahead (absent: it has read no row yet). */
  readonly watermarkHeldBackMs?: number;
}

/**
 * What holds a source's watermark back (docs/semantics.md): of its partitions that are behind, the
 * one with the least watermark, and how far it trails the partition furthest ahead. Null when no
 * partition that is behind holds the watermark back.
 */
export function watermarkHeldBack(
  partitions: readonly (PartitionWatermark | null)[],
): WatermarkHeldBack | null {
  let top = Number.NEGATIVE_INFINITY;
  let held = -1;
  let behind = 0;
  for (const [p, w] of partitions.entries()) {
    if (w === null) continue;
    if (w.value > top) top = w.value;
    if (!w.behind) continue;
    behind++;
    if (held < 0 || w.value < partitions[held]!.value) held = p;
  }
  if (held < 0) return null;
  const value = partitions[held]!.value;
  if (!(value < top)) return null;
  return {
    partitionsBehind: behind,
    watermarkHeldByPartition: held,
    // A partition with no row yet holds the watermark wholly: how far is then not known.
    ...(value === Number.NEGATIVE_INFINITY ? {} : { watermarkHeldBackMs: top - value }),
  };
}
