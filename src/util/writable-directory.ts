import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { invalidArgument, type MillraceError } from '../errors.js';

/** What a directory is for, as messages about it name it. */
export interface DirectoryRole {
  /** What the directory is, e.g. `'checkpoint location'`. */
  readonly name: string;
  /** What it holds, e.g. `'the checkpoint'`. */
  readonly holds: string;
  /** Where it is set, e.g. `'--checkpoint, checkpointLocation'`. */
  readonly setBy: string;
}

/** Why the file system refused, in words, by error code. */
const REFUSALS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
};

/**
 * Makes sure `path` is a directory this process can write, creating it and its parents when they
 * are missing. Whatever is in the way is an `INVALID_ARGUMENT` that names the directory by its
 * role and says what is wrong — a file where the directory or one of its parents should be, no
 * permission, a read-only file system — instead of the file system's bare error code.
 *
 * @example
 * await ensureWritableDirectory('ckpt/alerts', {
 *   name: 'checkpoint location',
 *   holds: 'the checkpoint',
 *   setBy: '--checkpoint, checkpointLocation',
 * });
 */
export async function ensureWritableDirectory(path: string, role: DirectoryRole): Promise<void> {
  try {
    // Succeeds on an existing directory; fails on a file (EEXIST) or a file among the parents.
    await mkdir(path, { recursive: true });
  } catch (e) {
    throw await notCreatable(path, role, e as NodeJS.ErrnoException);
  }
  try {
    // Writing files in it needs write and search permission.
    await access(path, constants.W_OK | constants.X_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    throw invalidArgument(
      `${role.name} '${path}' is not writable: ${REFUSALS[code] ?? (e as Error).message} (${code})`,
    );
  }
}

async function notCreatable(
  path: string,
  role: DirectoryRole,
  e: NodeJS.ErrnoException,
): Promise<MillraceError> {
  const code = e.code ?? '';
  if (code === 'EEXIST' || code === 'ENOTDIR') {
    const file = await firstFile(path);
    if (file === path) {
      return invalidArgument(
        `${role.name} '${path}' is a file, not a directory: give ${role.holds} (${role.setBy}) a ` +
          'directory, new or existing',
      );
    }
    if (file !== null) {
      return invalidArgument(
        `${role.name} '${path}' cannot be created: '${file}' is a file, not a directory`,
      );
    }
  }
  const why = REFUSALS[code];
  return invalidArgument(
    `${role.name} '${path}' cannot be created: ${why === undefined ? e.message : `${why} (${code})`}`,
  );
}

/** The path itself, or the nearest of its parents, that exists and is not a directory; null if none. */
async function firstFile(path: string): Promise<string | null> {
  for (let p = path; ; p = dirname(p)) {
    const s = await stat(p).catch(() => null);
    if (s !== null) return s.isDirectory() ? null : p;
    if (dirname(p) === p) return null;
  }
}
