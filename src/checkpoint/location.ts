import { ensureWritableDirectory } from '../util/writable-directory.js';

/**
 * Makes sure a checkpoint location is a directory the run can write, creating it when new. A file
 * there or among its parents, or a directory the process may not write, is refused with
 * `INVALID_ARGUMENT` naming the checkpoint location and what is wrong, before anything is read or
 * locked (`millrace run` exits 2: it is a usage error).
 *
 * @example await ensureCheckpointLocation('ckpt/alerts');
 */
export function ensureCheckpointLocation(location: string): Promise<void> {
  return ensureWritableDirectory(location, {
    name: 'checkpoint location',
    holds: 'the checkpoint',
    setBy: '--checkpoint, checkpointLocation',
  });
}
