import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type DeadLetter, MillraceError, startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const failing = new URL('../fixtures/jobs/failing.js', import.meta.url);
const sideOutputs = new URL('../fixtures/jobs/side-outputs.js', import.meta.url);
const tempDir = tempDirs('millrace-side-outputs');

/** The records of every JSON-lines file in `dir`, files in name order. */
function readLines(dir: string): unknown[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as unknown);
}

describe('the deadLetters and lateRows query options', () => {
  it('refuses, when the query starts, a side output it cannot use, naming it', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { deadLetters: 'out' },
        /^deadLetters must be \{ path: directory \} or \{ kafka: \{ brokers, topic \} \}, got "out"$/,
      ],
      [{ deadLetters: { path: '' } }, /^deadLetters\.path must be a directory path, got ""$/],
      [{ deadLetters: { path: 'a', kafka: {} } }, /not both$/],
      [{ deadLetters: { dir: 'a' } }, /unknown field 'dir'$/],
      [
        { lateRows: { kafka: { brokers: 'k1', topic: 'late' } } },
        /^lateRows\.kafka: brokers must be 'host:port'/,
      ],
      [
        { lateRows: { kafka: { brokers: 'k1:9092', topic: 'bad topic' } } },
        /^lateRows\.kafka\.topic must be a Kafka topic name/,
      ],
      [
        { deadLetters: { path: tempDir() } },
        /^deadLetters: this query's onBadRecord is 'fail', so it has no dead letters to write/,
      ],
      [
        { lateRows: { path: tempDir() } },
        /^lateRows: this query's onLateRow is 'drop', so it has no late rows to write/,
      ],
      [
        { onBadRecord: 'deadLetter', deadLetters: { path: file } },
        /^dead-letter directory '.*a-file' is a file, not a directory: give the dead letters \(--dead-letters, deadLetters\.path\) a directory/,
      ],
    ];
    for (const [options, message] of cases) {
      await assert.rejects(
        startQuery(failing, { clock: 'manual', options }),
        (e: unknown) => {
          assert.ok(e instanceof MillraceError);
          assert.equal(e.code, 'INVALID_ARGUMENT', e.message);
          assert.match(e.message, message);
          return true;
        },
        JSON.stringify(options),
      );
    }
  });

  it('writes every dead letter, as q.deadLetters() has it, to a file of the run by the time stop() resolves', async () => {
    const out = tempDir();
    const q = await startQuery(failing, {
      clock: 'manual',
      options: { onBadRecord: 'deadLetter', deadLetters: { path: out } },
    });
    let seen: DeadLetter[];
    try {
      q.source('in').addData([
        { id: 1, amount: 13 },
        { id: 2, amount: 5 },
      ]);
      q.source('in').addData([{ id: 3, amount: 13 }], 1);
      await q.processAllAvailable();
      seen = q.deadLetters();
      assert.equal(seen.length, 2);
    } finally {
      await q.stop();
    }
    const written = readLines(out) as DeadLetter[];
    const byId = (a: DeadLetter, b: DeadLetter) =>
      (a.row as { id: number }).id - (b.row as { id: number }).id;
    assert.deepEqual(written.sort(byId), seen.sort(byId));
    assert.deepEqual(
      written.map((d) => [d.error.message, d.partition, d.sourceOffset?.offset]),
      [
        ['unlucky amount in row 1', 0, 0],
        ['unlucky amount in row 3', 1, 0],
      ],
    );
  });

  it('has an epoch’s dead letters in their file once the epoch has committed', async () => {
    const out = tempDir();
    const q = await startQuery(failing, {
      clock: 'manual',
      checkpointLocation: tempDir(),
      options: { onBadRecord: 'deadLetter', deadLetters: { path: out } },
    });
    try {
      q.source('in').addData([{ id: 7, amount: 13 }]);
      await q.processAllAvailable();
      const committed = once(q, 'epochCommitted');
      q.clock.advance(5 * 60_000);
      await committed;
      assert.deepEqual(
        readLines(out).map((d) => (d as DeadLetter).row),
        [{ id: 7, amount: 13 }],
      );
    } finally {
      await q.stop();
    }
  });

  it('writes late rows, with their watermark, stage and time, to their directory', async () => {
    const input = tempDir();
    // One row a batch. A batch judges rows late by the previous batch's watermark (Spark's rule),
    // so the third row meets the 50 s the first moved it to.
    const rows = [
      { id: 1, sensor: 'a', amount: 1, ts: 60_000 },
      { id: 2, sensor: 'a', amount: 1, ts: 61_000 },
      { id: 3, sensor: 'a', amount: 1, ts: 1000 },
    ];
    writeFileSync(join(input, 'r.jsonl'), rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const out = tempDir();
    const q = await startQuery(sideOutputs, {
      params: { path: input, case: 'lateRows' },
      clock: 'manual',
      clockStart: 1_700_000_000_000,
      options: { onLateRow: 'sideOutput', lateRows: { path: out } },
    });
    await q.awaitTermination();
    assert.deepEqual(readLines(out), q.lateRows());
    assert.deepEqual(q.lateRows(), [
      {
        row: rows[2],
        watermark: 50_000,
        operator: { id: 2, kind: 'aggregate' },
        stage: 1,
        partition: 0,
        sourceOffset: { source: 0, partition: 0, offset: 2 },
        timestamp: 1_700_000_000_000,
      },
    ]);
  });
});
