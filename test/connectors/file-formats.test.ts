import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRows } from '../../src/connectors/files/formats.js';

const unreadable = (message: RegExp) => ({ name: 'MillraceError', code: 'SOURCE_READ_FAILED', message });

describe('reading a whole file as rows (static tables, readFilesSinkOutput)', () => {
  it('reads CSV records by their header, and JSON lines of any value', async () => {
    assert.deepEqual(await decodeRows(Buffer.from('merchant,city\nm1,Oslo\n'), 'csv', 't.csv'), [
      { merchant: 'm1', city: 'Oslo' },
    ]);
    assert.deepEqual(await decodeRows(Buffer.from('{"a":1}\n42\n'), 'json', 't.jsonl'), [{ a: 1 }, 42]);
  });

  it('refuses a CSV file whose header cannot be read with SOURCE_READ_FAILED naming the file and line 1', async () => {
    await assert.rejects(
      decodeRows(Buffer.from('merchant,"city"x\nm1,Oslo\n'), 'csv', '/tables/merchants.csv'),
      unreadable(/^\/tables\/merchants\.csv, line 1: not CSV \(Invalid Closing Quote/),
    );
  });

  it('refuses a CSV record that does not fit the header, naming its line', async () => {
    await assert.rejects(
      decodeRows(Buffer.from('merchant,city\nm1,Oslo\nm2\n'), 'csv', 'merchants.csv'),
      unreadable(/^merchants\.csv, line 3: not CSV \(Invalid Record Length/),
    );
  });

  it('refuses a line that is not JSON, and an Arrow file that is not one, naming the file', async () => {
    await assert.rejects(
      decodeRows(Buffer.from('{"a":1}\n{oops\n'), 'json', 'rows.jsonl'),
      unreadable(/^rows\.jsonl, line 2: not JSON/),
    );
    await assert.rejects(
      decodeRows(Buffer.from('not arrow'), 'arrow', 'rows.arrow'),
      unreadable(/^rows\.arrow: not an Arrow IPC file/),
    );
  });
});
