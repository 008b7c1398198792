import { readFile } from 'node:fs/promises';
import { ErrorCode, MillraceError } from '../errors.js';
import type { StaticFileFormat } from '../plan/join.js';
import { readRows } from './files/formats.js';

/**
 * The rows of a static table's file (`statics.fromFile`), in file order: JSON lines, CSV, Arrow
 * IPC, or one JSON array. A line or record that cannot be read throws, naming the file.
 */
export async function readStaticFile(path: string, format: StaticFileFormat): Promise<unknown[]> {
  if (format !== 'jsonArray') return readRows(path, format);
  const text = await readFile(path, 'utf8');
  let rows: unknown;
  try {
    rows = JSON.parse(text);
  } catch (e) {
    throw new MillraceError(ErrorCode.SOURCE_READ_FAILED, `${path}: not JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(rows))
    throw new MillraceError(ErrorCode.SOURCE_READ_FAILED, `${path}: expected a JSON array of rows`);
  return rows;
}
