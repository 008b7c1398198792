import { mkdir, unlink } from 'node:fs/promises';
import { ErrorCode, MillraceError } from '../errors.js';
import { numberedEntries, readChecked, readCheckedIfExists, writeFileAtomic } from './files.js';
import type { CheckpointLayout } from './layout.js';

/** Offsets of one source: `{ partition: next offset }` (what the epoch read up to). */
export type SourceOffsets = Record<string, number>;

/** An offset log entry: what an epoch read, and the epoch's metadata. */
export interface OffsetEntry {
  /** `v1`: one line per source in plan order. `v2`: sources keyed by name (named sources). */
  readonly format: 'v1' | 'v2';
  readonly metadata: {
    readonly batchWatermarkMs: number;
    readonly batchTimestampMs: number;
    /**
     * An epoch's offsets written at its commit (real-time mode) carry the commit entry it goes on
     * to write: a restart that finds the sink already committed the epoch, but not the commit
     * file, finishes the commit with it instead of redoing the epoch.
     */
    readonly commit?: CommitEntry;
  };
  /** v1: by source position. v2: by source name. */
  readonly sources: readonly { readonly key: string; readonly offsets: SourceOffsets }[];
}

/** A commit log entry: the epoch is done. */
export interface CommitEntry {
  readonly nextBatchWatermarkMs: number;
  /** Each watermark input's value at the end of the epoch (null: none yet); restored on restart. */
  readonly watermarks?: readonly (number | null)[];
  /**
   * Real-time mode: the source partitions that held the watermark back at the end of the epoch, one
   * per source that had one (absent: none did). For `millrace checkpoint inspect`; a restart does
   * not read it.
   */
  readonly watermarkHeldBack?: readonly WatermarkHold[];
}

/** A source partition that was behind and held the watermark back (docs/semantics.md). */
export interface WatermarkHold {
  /** The source: its key in the offset log (its position in v1, its name in v2). */
  readonly source: string;
  readonly partition: number;
  /** How many of the source's partitions were behind. */
  readonly partitionsBehind: number;
  /** How far its watermark trailed the source's partition furthest ahead (absent: it had read no row). */
  readonly heldBackMs?: number;
}

function corrupt(path: string, why: string): MillraceError {
  return new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
}

function encodeOffsets(e: OffsetEntry): string {
  const lines = [e.format, JSON.stringify(e.metadata)];
  for (const s of e.sources) {
    lines.push(
      e.format === 'v1' ? JSON.stringify(s.offsets) : JSON.stringify({ name: s.key, offsets: s.offsets }),
    );
  }
  return `${lines.join('\n')}\n`;
}

function decodeOffsets(text: string, path: string): OffsetEntry {
  const lines = text.split('\n').filter((l) => l !== '');
  const format = lines[0];
  if (format !== 'v1' && format !== 'v2') throw corrupt(path, `unknown offset log format '${format}'`);
  try {
    const metadata = JSON.parse(lines[1] ?? 'null');
    if (typeof metadata !== 'object' || metadata === null) throw corrupt(path, 'no epoch metadata');
    const sources = lines.slice(2).map((l, i) => {
      const v = JSON.parse(l);
      return format === 'v1'
        ? { key: String(i), offsets: v as SourceOffsets }
        : { key: String(v.name), offsets: v.offsets as SourceOffsets };
    });
    return { format, metadata, sources };
  } catch (e) {
    throw e instanceof MillraceError ? e : corrupt(path, (e as Error).message);
  }
}

/**
 * The offset and commit logs: one file per epoch each, written atomically. An epoch is committed
 * when its commit file exists; real-time epochs write both at commit, micro-batches write the
 * offsets before the batch runs and the commit after.
 */
export class EpochLogs {
  constructor(private readonly layout: CheckpointLayout) {}

  async init(): Promise<void> {
    await mkdir(this.layout.offsetsDir, { recursive: true });
    await mkdir(this.layout.commitsDir, { recursive: true });
  }

  /** Writes an epoch's offsets file; resolves with the bytes written. */
  async writeOffsets(epoch: number, entry: OffsetEntry): Promise<number> {
    return writeFileAtomic(this.layout.offsets(epoch), Buffer.from(encodeOffsets(entry)));
  }

  /** Writes an epoch's commit file; resolves with the bytes written. */
  async writeCommit(epoch: number, entry: CommitEntry): Promise<number> {
    return writeFileAtomic(this.layout.commit(epoch), Buffer.from(`v1\n${JSON.stringify(entry)}\n`));
  }

  async readOffsets(epoch: number): Promise<OffsetEntry | undefined> {
    const path = this.layout.offsets(epoch);
    const bytes = await readCheckedIfExists(path);
    return bytes === undefined ? undefined : decodeOffsets(bytes.toString(), path);
  }

  async readCommit(epoch: number): Promise<CommitEntry | undefined> {
    const path = this.layout.commit(epoch);
    const bytes = await readCheckedIfExists(path);
    if (bytes === undefined) return undefined;
    const [format, json] = bytes.toString().split('\n');
    if (format !== 'v1') throw corrupt(path, `unknown commit log format '${format}'`);
    try {
      return JSON.parse(json ?? '') as CommitEntry;
    } catch (e) {
      throw corrupt(path, (e as Error).message);
    }
  }

  /** Epochs that have an offsets file, ascending. */
  offsetEpochs(): Promise<number[]> {
    return numberedEntries(this.layout.offsetsDir);
  }

  /** Epochs that have a commit file, ascending. */
  commitEpochs(): Promise<number[]> {
    return numberedEntries(this.layout.commitsDir);
  }

  /** Removes the log files of epochs before `epoch` (retention); never the newest ones. */
  async purgeBefore(epoch: number): Promise<void> {
    for (const dir of [this.layout.offsetsDir, this.layout.commitsDir]) {
      for (const e of await numberedEntries(dir)) {
        if (e < epoch) await unlink(`${dir}/${e}`).catch(() => {});
      }
    }
  }
}

export { readChecked };
