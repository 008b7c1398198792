import { join } from 'node:path';
import { recordedSource } from '../connectors/registry.js';
import { type Damage, damageOf } from './damage.js';
import type { OffsetEntry } from './epoch-logs.js';
import { readCheckedIfExists } from './files.js';
import { type CheckpointLayout, SCHEDULE_FILE } from './layout.js';
import type { CheckpointMetadata, SourceRecord } from './metadata.js';

/** An offsets file a restart reads: the last committed epoch's, or a planned one it redoes. */
export interface ResumedOffsets {
  readonly epoch: number;
  readonly entry: OffsetEntry;
}

/** What the checks read: a files source's log entries and a generated source's schedule. */
export interface SourceFilesChecked {
  readonly damage: readonly Damage[];
  /** Files read and checked. */
  readonly files: number;
}

/** A source's key in the offset log and under `sources/`: its position (v1) or its name (v2). */
export function sourceKey(metadata: CheckpointMetadata, source: SourceRecord): string {
  return metadata.offsetLogFormat === 'v2' ? String(source.name) : String(source.index);
}

const label = (s: SourceRecord) => `source ${s.index}${s.name === null ? '' : ` ${s.name}`} (${s.kind})`;

/**
 * Checks what a restart needs of each source's own files (`sources/<key>/`), given the offsets it
 * resumes from or redoes. A source those offsets list has been read from, so:
 *
 * - a generated source needs its `schedule`: row k of a partition is the row due at the first
 *   run's start time + k / rate, and a new start time would give other rows at the same offsets;
 * - a source that keeps files of its own there checks them (its connector's `checkFiles`: a files
 *   source's log).
 *
 * A source the offsets do not list (one added since, in v2) starts afresh and needs nothing yet.
 */
export async function checkSourceFiles(
  layout: CheckpointLayout,
  metadata: CheckpointMetadata,
  resumed: readonly ResumedOffsets[],
): Promise<SourceFilesChecked> {
  const damage: Damage[] = [];
  let files = 0;
  for (const source of metadata.sources) {
    const key = sourceKey(metadata, source);
    const dir = layout.sourceDir(key);
    const listed = resumed.flatMap(({ epoch, entry }) => {
      const offsets = entry.sources.find((s) => s.key === key)?.offsets;
      return offsets === undefined ? [] : [{ epoch, offsets }];
    });
    const connector = recordedSource(source.kind);
    const found =
      connector?.generated !== undefined
        ? await checkSchedule(join(dir, SCHEDULE_FILE), source, listed)
        : connector?.checkFiles !== undefined
          ? await connector.checkFiles(dir, label(source), listed)
          : { damage: [], files: 0 };
    damage.push(...found.damage);
    files += found.files;
  }
  return { damage, files };
}

/** Where a source stood in an offsets file a restart reads: partition → next offset. */
type Listed = readonly { readonly epoch: number; readonly offsets: Readonly<Record<string, number>> }[];

async function checkSchedule(
  path: string,
  source: SourceRecord,
  listed: Listed,
): Promise<SourceFilesChecked> {
  let bytes: Buffer | undefined;
  try {
    bytes = await readCheckedIfExists(path);
  } catch (e) {
    return { damage: [damageOf(e, path)], files: 0 };
  }
  if (bytes === undefined) {
    if (listed.length === 0) return { damage: [], files: 0 };
    const clause =
      `is missing: ${label(source)} has read up to the offsets of epoch ${listed[0]!.epoch}, and its ` +
      "rows are those due from the first run's start time on, which this file keeps";
    return { damage: [{ path, noun: 'checkpoint file', clause }], files: 0 };
  }
  let startTimeMs: unknown;
  try {
    startTimeMs = (JSON.parse(bytes.toString()) as { startTimeMs?: unknown } | null)?.startTimeMs;
  } catch {}
  if (typeof startTimeMs === 'number') return { damage: [], files: 1 };
  return {
    damage: [{ path, noun: 'checkpoint file', clause: 'is corrupt: it has no startTimeMs' }],
    files: 1,
  };
}
