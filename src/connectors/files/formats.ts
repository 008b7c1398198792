import { readFile } from 'node:fs/promises';
import { ErrorCode, MillraceError } from '../../errors.js';

// Loaded on first use: apache-arrow takes about half a second to import, which every worker
// thread would pay at start, whether or not its query reads or writes files.
let arrowModule: Promise<typeof import('apache-arrow')> | undefined;
let csvModule: Promise<typeof import('csv-parse/sync')> | undefined;
const arrow = () => (arrowModule ??= import('apache-arrow'));
const csv = () => (csvModule ??= import('csv-parse/sync'));

/** File formats the files source reads (`json`: JSON lines; `csv` with a header line; `arrow`: Arrow IPC). */
export type FileFormat = 'json' | 'csv' | 'arrow';

export const EXTENSIONS: Record<FileFormat, string> = { json: '.jsonl', csv: '.csv', arrow: '.arrow' };

/** The rows of one file, in file order. A line or record that cannot be read throws, naming the file. */
export async function readRows(path: string, format: FileFormat): Promise<unknown[]> {
  const bytes = await readFile(path);
  return decodeRows(bytes, format, path);
}

/** The rows of a file's bytes; a line or record that cannot be read throws, naming the file and line. */
export async function decodeRows(bytes: Buffer, format: FileFormat, path: string): Promise<unknown[]> {
  const records = await decodeRecords(bytes, format, { objectsOnly: false });
  const bad = records.find((r): r is BadFileRecord => r instanceof BadFileRecord);
  if (bad !== undefined)
    throw new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `${path}${bad.line > 0 ? `, line ${bad.line}` : ''}: ${bad.reason}`,
    );
  return records;
}

/** A line or record of a file that cannot be read as a row (see {@link decodeRecords}). */
export class BadFileRecord {
  constructor(
    /** The line it starts on (1-based); 0 when the file has no lines (an Arrow file). */
    readonly line: number,
    /** What was read, cut to {@link BAD_RECORD_TEXT_MAX} characters. */
    readonly text: string,
    /** Why it is not a row. */
    readonly reason: string,
  ) {}
}

/** A bad record keeps at most this much of its text (a binary file can hold one very long "line"). */
export const BAD_RECORD_TEXT_MAX = 1024;

export function clipText(text: string): string {
  return text.length <= BAD_RECORD_TEXT_MAX
    ? text
    : `${text.slice(0, BAD_RECORD_TEXT_MAX)}… (${text.length - BAD_RECORD_TEXT_MAX} more characters)`;
}

/**
 * The records of one file, in file order, as a files source reads them: rows, and a
 * {@link BadFileRecord} in its place for each line or record that is not one — a JSON line that
 * does not parse or is not an object (`42`, `null`, `"text"`, an array), a CSV record that does
 * not parse or has another number of columns than the header, an Arrow file that cannot be read
 * (one bad record for the whole file). Each takes an offset, as a row does, so a file always
 * yields the same offsets, and the query's `onBadRecord` policy decides what becomes of it.
 * `objectsOnly: false` takes JSON values of any kind as rows (a files sink's output may hold them).
 */
export async function decodeRecords(
  bytes: Buffer,
  format: FileFormat,
  { objectsOnly = true }: { objectsOnly?: boolean } = {},
): Promise<unknown[]> {
  switch (format) {
    case 'json': {
      const out: unknown[] = [];
      const text = bytes.toString('utf8');
      let line = 0;
      for (const l of text.split('\n')) {
        line++;
        if (l.trim() === '') continue;
        let value: unknown;
        try {
          value = JSON.parse(l);
        } catch (e) {
          out.push(new BadFileRecord(line, clipText(l), `not JSON (${(e as Error).message})`));
          continue;
        }
        if (objectsOnly && (value === null || typeof value !== 'object' || Array.isArray(value))) {
          out.push(
            new BadFileRecord(line, clipText(l), `not a JSON object: ${clipText(JSON.stringify(value))}`),
          );
        } else {
          out.push(value);
        }
      }
      return out;
    }
    case 'csv': {
      const { parse: parseCsv } = await csv();
      const out: unknown[] = [];
      try {
        parseCsv(bytes, {
          columns: true,
          skip_empty_lines: true,
          raw: true,
          skip_records_with_error: true,
          on_skip: (err, raw) => {
            out.push(
              new BadFileRecord(
                Number(err?.lines ?? 0),
                clipText((raw ?? '').replace(/\r?\n$/, '')),
                `not CSV (${err?.message})`,
              ),
            );
            return undefined;
          },
          on_record: ({ record }) => {
            out.push(record);
            return undefined;
          },
        });
      } catch (e) {
        // The header itself could not be read: the whole file is one bad record.
        return [new BadFileRecord(1, clipText(bytes.toString('utf8')), `not CSV (${(e as Error).message})`)];
      }
      return out;
    }
    case 'arrow': {
      const { tableFromIPC } = await arrow();
      try {
        return tableFromIPC(bytes)
          .toArray()
          .map((r) => r.toJSON());
      } catch (e) {
        return [
          new BadFileRecord(
            0,
            clipText(bytes.toString('latin1')),
            `not an Arrow IPC file (${(e as Error).message})`,
          ),
        ];
      }
    }
  }
}

/** Rows as a file's bytes: JSON lines, or an Arrow IPC file whose schema is inferred from the rows. */
export async function encodeRows(rows: readonly unknown[], format: 'json' | 'arrow'): Promise<Uint8Array> {
  if (format === 'json') return Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  const { tableFromJSON, tableToIPC } = await arrow();
  return tableToIPC(tableFromJSON(rows as Record<string, unknown>[]), 'file');
}
