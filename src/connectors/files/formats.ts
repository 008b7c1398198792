import { readFile } from 'node:fs/promises';
import { tableFromIPC, tableFromJSON, tableToIPC } from 'apache-arrow';
import { parse as parseCsv } from 'csv-parse/sync';

/** File formats the files source reads (`json`: JSON lines; `csv` with a header line; `arrow`: Arrow IPC). */
export type FileFormat = 'json' | 'csv' | 'arrow';

export const EXTENSIONS: Record<FileFormat, string> = { json: '.jsonl', csv: '.csv', arrow: '.arrow' };

/** The rows of one file, in file order. A line or record that cannot be read throws, naming the file. */
export async function readRows(path: string, format: FileFormat): Promise<unknown[]> {
  const bytes = await readFile(path);
  return decodeRows(bytes, format, path);
}

export function decodeRows(bytes: Buffer, format: FileFormat, path: string): unknown[] {
  switch (format) {
    case 'json': {
      const rows: unknown[] = [];
      const text = bytes.toString('utf8');
      let line = 0;
      for (const l of text.split('\n')) {
        line++;
        if (l.trim() === '') continue;
        try {
          rows.push(JSON.parse(l));
        } catch (e) {
          throw new Error(`${path}, line ${line}: not JSON (${(e as Error).message})`);
        }
      }
      return rows;
    }
    case 'csv':
      try {
        // A header line names the columns; values are strings (as Spark without inferSchema).
        return parseCsv(bytes, { columns: true, skip_empty_lines: true }) as unknown[];
      } catch (e) {
        throw new Error(`${path}: not CSV (${(e as Error).message})`);
      }
    case 'arrow': {
      let table: ReturnType<typeof tableFromIPC>;
      try {
        table = tableFromIPC(bytes);
      } catch (e) {
        throw new Error(`${path}: not an Arrow IPC file (${(e as Error).message})`);
      }
      return table.toArray().map((r) => r.toJSON());
    }
  }
}

/** Rows as a file's bytes: JSON lines, or an Arrow IPC file whose schema is inferred from the rows. */
export function encodeRows(rows: readonly unknown[], format: 'json' | 'arrow'): Uint8Array {
  if (format === 'json') return Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return tableToIPC(tableFromJSON(rows as Record<string, unknown>[]), 'file');
}
