import { readFile } from 'node:fs/promises';

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

export async function decodeRows(bytes: Buffer, format: FileFormat, path: string): Promise<unknown[]> {
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
    case 'csv': {
      const { parse: parseCsv } = await csv();
      try {
        // A header line names the columns; values are strings (as Spark without inferSchema).
        return parseCsv(bytes, { columns: true, skip_empty_lines: true }) as unknown[];
      } catch (e) {
        throw new Error(`${path}: not CSV (${(e as Error).message})`);
      }
    }
    case 'arrow': {
      const { tableFromIPC } = await arrow();
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
export async function encodeRows(rows: readonly unknown[], format: 'json' | 'arrow'): Promise<Uint8Array> {
  if (format === 'json') return Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  const { tableFromJSON, tableToIPC } = await arrow();
  return tableToIPC(tableFromJSON(rows as Record<string, unknown>[]), 'file');
}
