import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tableFromJSON, tableToIPC } from 'apache-arrow';
import {
  MillraceError,
  readFilesSinkOutput,
  type StreamingQuery,
  type StreamingQueryProgress,
  startQuery,
} from '../../src/index.js';
import type { Reading } from '../fixtures/jobs/files-source.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/files-source.js', import.meta.url);

const tempDir = tempDirs('millrace-files-source');

const r = (sensor: string, value: number): Reading => ({ sensor, value });
const jsonLines = (rows: Reading[]) => rows.map((x) => `${JSON.stringify(x)}\n`).join('');

/** Writes a file the way a producer should: under a hidden name, then renamed into place. */
function put(dir: string, name: string, content: string | Uint8Array): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `.${name}.tmp`), content);
  renameSync(join(dir, `.${name}.tmp`), join(dir, name));
}

async function start(params: Record<string, string>, checkpoint?: string, previous?: StreamingQuery) {
  return startQuery(job, { params, clock: 'manual', checkpointLocation: checkpoint, continueFrom: previous });
}

describe('sources.files', () => {
  it('reads the files of a directory in name order, and new files as they appear', async () => {
    const path = tempDir();
    put(path, 'b.jsonl', jsonLines([r('b', 1), r('b', 2)]));
    put(path, 'a.jsonl', jsonLines([r('a', 1)]));
    writeFileSync(join(path, '.c.jsonl.tmp'), jsonLines([r('hidden', 0)]));
    writeFileSync(join(path, '_SUCCESS'), '');
    const q = await start({ path });
    try {
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [r('a', 1), r('b', 1), r('b', 2)]);
      put(path, 'c.jsonl', jsonLines([r('c', 1)]));
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), [r('a', 1), r('b', 1), r('b', 2), r('c', 1)]);
    } finally {
      await q.stop();
    }
  });

  it('reads CSV (values as strings) and Arrow IPC files', async () => {
    const csv = tempDir();
    put(csv, 'x.csv', 'sensor,value\na,1\n"b,c",2\n');
    const arrow = tempDir();
    put(arrow, 'x.arrow', tableToIPC(tableFromJSON([{ ...r('a', 1) }, { ...r('b', 2) }]), 'file'));
    for (const [path, format, expected] of [
      [
        csv,
        'csv',
        [
          { sensor: 'a', value: '1' },
          { sensor: 'b,c', value: '2' },
        ],
      ],
      [arrow, 'arrow', [r('a', 1), r('b', 2)]],
    ] as const) {
      const q = await start({ path, format, trigger: 'availableNow' });
      await q.awaitTermination();
      assert.deepEqual(q.sink('out').rows(), expected, format);
    }
  });

  it('takes at most maxRowsPerTrigger rows a batch, across file boundaries', async () => {
    const path = tempDir();
    put(path, '1.jsonl', jsonLines([r('a', 1), r('a', 2), r('a', 3)]));
    put(path, '2.jsonl', jsonLines([r('b', 1), r('b', 2)]));
    const q = await start({ path, trigger: 'availableNow', maxRows: '2' });
    await q.awaitTermination();
    assert.deepEqual(
      q
        .sink<Reading>('out')
        .epochs()
        .map((e) => e.rows.map((x) => `${x.sensor}${x.value}`)),
      [['a1', 'a2'], ['a3', 'b1'], ['b2']],
    );
  });

  for (const trigger of ['realTime', 'processingTime']) {
    it(`resumes after the rows it committed, and takes files added in between (${trigger})`, async () => {
      const path = tempDir();
      const ckpt = tempDir();
      put(path, '1.jsonl', jsonLines([r('a', 1), r('a', 2)]));
      const first = await start({ path, trigger }, ckpt);
      await first.processAllAvailable();
      await first.stop();
      put(path, '2.jsonl', jsonLines([r('b', 1)]));
      // A file whose name sorts first, added later, is taken after the files already taken.
      put(path, '0.jsonl', jsonLines([r('c', 1)]));
      const second = await start({ path, trigger }, ckpt, first);
      try {
        await second.processAllAvailable();
        assert.deepEqual(second.sink('out').rows(), [r('a', 1), r('a', 2), r('c', 1), r('b', 1)]);
      } finally {
        await second.stop();
      }
    });
  }

  it("reads a files sink's output through its manifests only", async () => {
    const input = tempDir();
    const output = join(tempDir(), 'out');
    put(input, '1.jsonl', jsonLines([r('a', 1), r('b', 2)]));
    const writer = await start({ path: input, out: output, trigger: 'availableNow' }, tempDir());
    await writer.awaitTermination();
    // A file of an epoch that never committed: no manifest lists it.
    writeFileSync(join(output, 'part-000009-000-0badf00d.jsonl'), jsonLines([r('x', 9)]));
    const reader = await start({ path: output, trigger: 'availableNow' });
    await reader.awaitTermination();
    assert.deepEqual(reader.sink('out').rows(), await readFilesSinkOutput(output));
    assert.deepEqual(reader.sink('out').rows(), [r('a', 1), r('b', 2)]);
  });

  it('fails a restart with SOURCE_DATA_LOST when a file it still needs is gone', async () => {
    const path = tempDir();
    const ckpt = tempDir();
    put(path, '1.jsonl', jsonLines([r('a', 1)]));
    const first = await start({ path, trigger: 'availableNow', maxRows: '1' }, ckpt);
    await first.awaitTermination();
    put(path, '2.jsonl', jsonLines([r('b', 1), r('b', 2)]));
    // Taken, then lost before its rows were committed.
    const second = await start({ path, trigger: 'processingTime' }, ckpt, first);
    await second.stop();
    rmSync(join(ckpt, 'commits'), { recursive: true });
    rmSync(join(path, '2.jsonl'));
    await assert.rejects(
      start({ path }, ckpt),
      (e: unknown) =>
        e instanceof MillraceError && e.code === 'SOURCE_DATA_LOST' && /2\.jsonl/.test(e.message),
    );
  });

  it('fails with SOURCE_READ_FAILED naming the file and line it cannot read, at start or later', async () => {
    const unreadable = (e: unknown) =>
      e instanceof MillraceError &&
      e.code === 'SOURCE_READ_FAILED' &&
      /2\.jsonl, line 2: not JSON/.test(e.message);
    const path = tempDir();
    put(path, '1.jsonl', jsonLines([r('a', 1)]));
    const q = await start({ path });
    await q.processAllAvailable();
    put(path, '2.jsonl', `${JSON.stringify(r('b', 1))}\n{not json\n`);
    await assert.rejects(q.processAllAvailable(), unreadable);
    await assert.rejects(q.awaitTermination(), unreadable);
    const again = await start({ path });
    await assert.rejects(again.awaitTermination(), unreadable);
  });

  // Regression: the files source ignored onBadRecord, so one bad line failed the query under skip
  // and deadLetter too, and JSON lines that are not objects became rows.
  describe('follows onBadRecord for lines and records it cannot read as rows', () => {
    const bad = [
      [
        'a JSON line that does not parse',
        'json',
        '{"sensor":"a","value":1}\n{not json\n{"sensor":"b","value":2}\n',
        2,
        /not JSON/,
      ],
      [
        'a JSON line that is a number',
        'json',
        '{"sensor":"a","value":1}\n42\n{"sensor":"b","value":2}\n',
        2,
        /not a JSON object: 42/,
      ],
      [
        'a JSON line that is null',
        'json',
        '{"sensor":"a","value":1}\nnull\n{"sensor":"b","value":2}\n',
        2,
        /not a JSON object: null/,
      ],
      [
        'a JSON line that is a string',
        'json',
        '{"sensor":"a","value":1}\n"text"\n{"sensor":"b","value":2}\n',
        2,
        /not a JSON object: "text"/,
      ],
      [
        'a CSV row missing a column',
        'csv',
        'sensor,value\na,1\nx\nb,2\n',
        3,
        /not CSV \(Invalid Record Length/,
      ],
    ] as const;
    const expected = (format: string) =>
      format === 'csv'
        ? [
            { sensor: 'a', value: '1' },
            { sensor: 'b', value: '2' },
          ]
        : [r('a', 1), r('b', 2)];
    for (const [what, format, content, line, reason] of bad) {
      it(`skips ${what}, counts it, and reads the rows around it`, async () => {
        const path = tempDir();
        put(path, `1.${format === 'csv' ? 'csv' : 'jsonl'}`, content);
        const q = await start({ path, format, onBadRecord: 'skip' });
        try {
          await q.processAllAvailable();
          assert.deepEqual(q.sink('out').rows(), expected(format));
          const progress = once(q, 'progress');
          q.clock.advance(1000);
          const [p] = (await progress) as [StreamingQueryProgress];
          assert.deepEqual(p.badRecords, { skipped: 1, deadLettered: 0 });
          assert.equal(p.numInputRows, 3, 'the bad record took an offset');
        } finally {
          await q.stop();
        }
        assert.deepEqual(q.deadLetters(), []);
      });

      it(`dead-letters ${what} with its file, line and text`, async () => {
        const path = tempDir();
        const name = `1.${format === 'csv' ? 'csv' : 'jsonl'}`;
        put(path, name, content);
        const q = await start({ path, format, onBadRecord: 'deadLetter' });
        try {
          await q.processAllAvailable();
          assert.deepEqual(q.sink('out').rows(), expected(format));
        } finally {
          await q.stop();
        }
        const letters = q.deadLetters();
        assert.equal(letters.length, 1);
        const [letter] = letters;
        assert.equal(letter!.error.code, 'SOURCE_READ_FAILED');
        assert.match(letter!.error.message, new RegExp(`${name.replace('.', '\\.')}, line ${line}: `));
        assert.match(letter!.error.message, reason);
        assert.equal(letter!.row, content.split('\n')[line - 1]);
        assert.deepEqual(letter!.sourceOffset, { source: 0, partition: 0, offset: 1 });
      });
    }

    it('dead-letters a binary file line by line, and an Arrow file it cannot read as one record', async () => {
      const json = tempDir();
      put(json, '1.jsonl', Buffer.from([0x00, 0xff, 0x10, 0x0a, 0x89, 0x50, 0x4e, 0x47, 0x0a]));
      put(json, '2.jsonl', jsonLines([r('a', 1)]));
      const arrow = tempDir();
      put(arrow, '1.arrow', 'not arrow at all');
      put(arrow, '2.arrow', tableToIPC(tableFromJSON([{ ...r('a', 1) }]), 'file'));
      for (const [path, format, letters] of [
        [json, 'json', 2],
        [arrow, 'arrow', 1],
      ] as const) {
        const q = await start({ path, format, onBadRecord: 'deadLetter', trigger: 'availableNow' });
        await q.awaitTermination();
        assert.deepEqual(q.sink('out').rows(), [r('a', 1)], format);
        assert.equal(q.deadLetters().length, letters, format);
        for (const d of q.deadLetters()) assert.match(d.error.message, /1\.(jsonl|arrow)/);
      }
    });
  });
});
