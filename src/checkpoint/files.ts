import { randomBytes } from 'node:crypto';
import { type FileHandle, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { ErrorCode, MillraceError } from '../errors.js';

/**
 * Durable, self-checking checkpoint files. Every file is written to a temporary name in the same
 * directory, flushed (fsync), renamed into place and the directory flushed, so a crash leaves
 * either the old file or the whole new one. Every file ends with a trailer holding the CRC-32 of
 * what precedes it, so a torn or corrupted file is detected — and named — when read.
 *
 * ```
 *  [payload bytes ...][\n#crc32:][8 hex digits][\n]
 *                      └──────── TRAILER_BYTES = 17 ────────┘
 * ```
 */
const TRAILER_PREFIX = Buffer.from('\n#crc32:');
const TRAILER_BYTES = TRAILER_PREFIX.length + 8 + 1;

/** The payload followed by its checksum trailer. */
export function withChecksum(payload: Uint8Array): Buffer {
  const hex = crc32(payload).toString(16).padStart(8, '0');
  return Buffer.concat([payload, TRAILER_PREFIX, Buffer.from(`${hex}\n`)]);
}

/** The payload of a checked file; throws CHECKPOINT_CORRUPT naming `path` when it does not check. */
export function verifyChecksum(bytes: Buffer, path: string): Buffer {
  const corrupt = (why: string) =>
    new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
  if (bytes.length < TRAILER_BYTES) throw corrupt(`it is truncated (${bytes.length} bytes)`);
  const trailer = bytes.subarray(bytes.length - TRAILER_BYTES);
  if (
    !trailer.subarray(0, TRAILER_PREFIX.length).equals(TRAILER_PREFIX) ||
    trailer[TRAILER_BYTES - 1] !== 0x0a
  ) {
    throw corrupt('its checksum trailer is missing (a torn write?)');
  }
  const expected = Number.parseInt(trailer.subarray(TRAILER_PREFIX.length, TRAILER_BYTES - 1).toString(), 16);
  const payload = bytes.subarray(0, bytes.length - TRAILER_BYTES);
  const actual = crc32(payload);
  if (actual !== expected) {
    throw corrupt(`its checksum is ${actual.toString(16)}, the file says ${expected.toString(16)}`);
  }
  return payload;
}

/** Writes `payload` (with its checksum) to `path` atomically and durably. */
/** Writes `payload` (with its checksum) to `path` atomically and durably; resolves with the file's size. */
export function writeFileAtomic(path: string, payload: Uint8Array): Promise<number> {
  return writeChunksAtomic(path, [payload]);
}

/**
 * Writes the concatenation of `chunks` (with its checksum) to `path` atomically and durably, one
 * chunk at a time: a large file never needs one large buffer, nor one long synchronous step.
 * Resolves with the file's size.
 */
export async function writeChunksAtomic(
  path: string,
  chunks: readonly Uint8Array[],
  /** The chunks' CRC-32, when the caller computed it as it made them. */
  knownCrc?: number,
): Promise<number> {
  const dir = dirname(path);
  let size = TRAILER_BYTES;
  for (const chunk of chunks) size += chunk.byteLength;
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'w');
  try {
    let crc = knownCrc ?? 0;
    if (knownCrc === undefined) for (const chunk of chunks) crc = crc32(chunk, crc);
    const trailer = Buffer.concat([TRAILER_PREFIX, Buffer.from(`${crc.toString(16).padStart(8, '0')}\n`)]);
    await writeAll(handle, [...chunks, trailer]);
    await handle.sync();
  } catch (e) {
    await handle.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw e;
  }
  await handle.close();
  await rename(temp, path);
  await syncDirectory(dir);
  return size;
}

/** Buffers one `writev` takes at most (IOV_MAX on Linux). */
const WRITEV_BUFFERS = 1024;

/**
 * Writes `chunks` one after the other, a `writev` per {@link WRITEV_BUFFERS} of them: every await
 * waits for a turn of the thread's event loop, and a worker busy with rows gives its loop a turn
 * only every few ms — a write per chunk (a state file has two per key group) kept its checkpoints
 * seconds behind their epochs.
 */
async function writeAll(handle: FileHandle, chunks: readonly Uint8Array[]): Promise<void> {
  for (let i = 0; i < chunks.length; i += WRITEV_BUFFERS) {
    const batch = chunks.slice(i, i + WRITEV_BUFFERS);
    let size = 0;
    for (const b of batch) size += b.byteLength;
    const { bytesWritten } = await handle.writev(batch as Uint8Array[]);
    // A short write (rare on files): the rest, as one buffer.
    if (bytesWritten < size) await handle.writeFile(Buffer.concat(batch).subarray(bytesWritten));
  }
}

/** Flushes a directory's entries (the rename) to disk. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Reads and verifies a checkpoint file. */
export async function readChecked(path: string): Promise<Buffer> {
  return verifyChecksum(await readFile(path), path);
}

/** Reads a checkpoint file if it exists (undefined otherwise). */
export async function readCheckedIfExists(path: string): Promise<Buffer | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  return verifyChecksum(bytes, path);
}

/** The entries of a directory named by a number (epochs, sequence numbers), ascending; none if it is missing. */
export async function numberedEntries(dir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return names
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);
}
