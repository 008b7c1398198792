import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type DeadLetter, MillraceError, startQuery } from '../../src/index.js';
import { type Reading, scoreOf } from '../fixtures/jobs/arrow-udfs.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/arrow-udfs.js', import.meta.url);
const tempDir = tempDirs('millrace-arrow-udfs');

const readings = (from: number, to: number): Reading[] =>
  Array.from({ length: to - from }, (_, k) => {
    const id = from + k;
    return { id, x: id * 1.5, y: (id % 5) - 2, tag: `t${id}` };
  });

function workerResources(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'MessagePort' || r === 'Worker').length;
}

async function run(params: Record<string, string>, rows: Reading[]): Promise<unknown[]> {
  const q = await startQuery(job, { params: { ...placement, ...params }, clock: 'manual' });
  try {
    q.source<Reading>('readings').addData(rows);
    await q.processAllAvailable();
    return q.sink('out').rows();
  } finally {
    await q.stop();
  }
}

/** The placement the tests of a describe block below run with (set by the block). */
let placement: Record<string, string> = {};

for (const isolate of [false, true]) {
  const where = isolate ? 'on the UDF threads (isolate)' : "on the task's thread (the default)";
  describe(`Arrow UDFs and mapInArrow ${where}`, () => {
    before(() => {
      placement = isolate ? { isolate: 'true' } : {};
    });
    const input = readings(0, 40);
    for (const trigger of ['realTime', 'microBatch']) {
      for (const batch of ['1', '7', '0']) {
        const size = batch === '0' ? 'the default batch size' : `batches of ${batch}`;
        it(`withColumn with an arrowUdf equals the score in plain JavaScript, row by row (${trigger}, ${size})`, async () => {
          const out = await run({ op: 'withColumn', trigger, batch }, input);
          assert.deepEqual(
            out,
            input.map((r) => ({ ...r, score: scoreOf(r) })),
          );
        });
      }
      it(`select mixes an arrowUdf with per-row expressions (${trigger})`, async () => {
        const out = await run({ op: 'select', trigger, batch: '5' }, input);
        assert.deepEqual(
          out,
          input.map((r) => ({ id: r.id, score: scoreOf(r), tag: r.tag.toUpperCase() })),
        );
      });
      it(`mapInArrow returns batches of another length and shape (${trigger})`, async () => {
        const out = await run({ op: 'mapInArrow', trigger, batch: '6' }, input);
        assert.deepEqual(
          out,
          input.filter((r) => r.id % 2 === 0).map((r) => ({ id: r.id, score: scoreOf(r) })),
        );
      });
    }

    it('the batch size bounds the rows per batch and changes nothing else; order per partition is kept', async () => {
      const rows = readings(0, 60);
      for (const [batch, queryBatch] of [
        ['1', '0'],
        ['8', '0'],
        ['0', '3'],
      ] as const) {
        const out = (await run({ op: 'batchSizes', batch, queryBatch }, rows)) as (Reading & {
          batchRows: number;
        })[];
        const max = batch !== '0' ? Number(batch) : Number(queryBatch);
        assert.deepEqual(
          out.map(({ batchRows: _, ...r }) => r),
          rows,
          'the same rows in the same order',
        );
        assert.ok(
          out.every((r) => r.batchRows >= 1 && r.batchRows <= max),
          `every batch holds 1 to ${max} rows`,
        );
        if (max === 1) assert.ok(out.every((r) => r.batchRows === 1));
      }
      const defaults = (await run({ op: 'batchSizes', trigger: 'microBatch' }, rows)) as {
        batchRows: number;
      }[];
      assert.ok(
        defaults.every((r) => r.batchRows === rows.length),
        'micro-batch mode sends the whole batch at once by default (10 000 rows at most)',
      );
    });

    for (const batch of ['1', '8']) {
      it(`behind a shuffle, no watermark overtakes the rows a batch holds: every window counts all its rows (batches of ${batch})`, async () => {
        const rows = readings(0, 40);
        const out = (await run({ op: 'windowed', batch, queryBatch: batch }, rows)) as {
          window: { start: number; end: number };
          rows: number;
          score: number;
        }[];
        // The watermark ends at the last reading's time, 9.75 s: the windows before 9 s are closed.
        const expected = Array.from({ length: 9 }, (_, w) => {
          const inWindow = rows.filter((r) => Math.floor((r.id * 250) / 1000) === w);
          return {
            window: { start: w * 1000, end: (w + 1) * 1000 },
            rows: inWindow.length,
            score: inWindow.reduce((s, r) => s + scoreOf(r), 0),
          };
        });
        assert.deepEqual(
          [...out].sort((a, b) => a.window.start - b.window.start),
          expected,
        );
      });
    }

    it('results are exactly-once across a restart from a checkpoint', async () => {
      const dir = tempDir();
      const params = { ...placement, op: 'withColumn', batch: '4' };
      const first = await startQuery(job, { params, checkpointLocation: dir, clock: 'manual' });
      first.source<Reading>('readings').addData(readings(0, 10));
      await first.processAllAvailable();
      await first.stop();
      const second = await startQuery(job, {
        params,
        checkpointLocation: dir,
        clock: 'manual',
        continueFrom: first,
      });
      try {
        second.source<Reading>('readings').addData(readings(10, 25));
        await second.processAllAvailable();
        assert.deepEqual(
          second.sink('out').rows(),
          readings(0, 25).map((r) => ({ ...r, score: scoreOf(r) })),
        );
      } finally {
        await second.stop();
      }
    });

    describe('a UDF that throws', () => {
      // y is 13 in one row: the function throws for the whole batch of 4 it is in (rows 4..7).
      const rows = readings(0, 12).map((r) => (r.id === 5 ? { ...r, y: 13 } : r));
      const good = rows.filter((r) => r.id < 4 || r.id >= 8).map((r) => ({ ...r, score: scoreOf(r) }));

      it('skips the rows of its batch under onBadRecord skip', async () => {
        const out = await run(
          { op: 'withColumn', batch: '4', trigger: 'microBatch', onBadRecord: 'skip' },
          rows,
        );
        assert.deepEqual(out, good);
      });

      it('dead-letters each row of its batch, with the error, under onBadRecord deadLetter', async () => {
        const q = await startQuery(job, {
          params: {
            ...placement,
            op: 'withColumn',
            batch: '4',
            trigger: 'microBatch',
            onBadRecord: 'deadLetter',
          },
          clock: 'manual',
        });
        try {
          q.source<Reading>('readings').addData(rows);
          await q.processAllAvailable();
          assert.deepEqual(q.sink('out').rows(), good);
          const letters: DeadLetter[] = q.deadLetters();
          assert.deepEqual(
            letters.map((d) => (d.row as Reading).id),
            [4, 5, 6, 7],
          );
          assert.match(letters[0]!.error.message, /unlucky y/);
        } finally {
          await q.stop();
        }
      });

      it('fails the query under onBadRecord fail, and leaves no thread behind', async () => {
        const before = workerResources();
        const q = await startQuery(job, {
          params: { ...placement, op: 'withColumn', batch: '4' },
          clock: 'manual',
        });
        q.source<Reading>('readings').addData(rows);
        const error = await q.awaitTermination().then(
          () => assert.fail('the query should have failed'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof MillraceError);
        assert.match(error.message, /unlucky y/);
        await q.stop();
        assert.equal(workerResources(), before, 'every host, UDF thread and port is gone');
      });
    });

    it('a result of the wrong length is an INVALID_ROW error naming the UDF', async () => {
      const q = await startQuery(new URL('../fixtures/jobs/arrow-misuse.js', import.meta.url), {
        params: { ...placement, misuse: 'length' },
        clock: 'manual',
      });
      q.source('in').addData([{ a: 1 }, { a: 2 }]);
      await assert.rejects(q.awaitTermination(), (e: MillraceError) => {
        assert.equal(e.code, 'INVALID_ROW');
        assert.match(e.message, /arrowUdf 'halve'.*returned 1 values for a batch of 2 rows/);
        return true;
      });
      await q.stop();
    });

    it('a value that does not fit its declared column is a bad record naming the UDF and the column', async () => {
      const q = await startQuery(new URL('../fixtures/jobs/arrow-misuse.js', import.meta.url), {
        params: { ...placement, misuse: 'type' },
        clock: 'manual',
      });
      try {
        q.source('in').addData([{ a: 1 }, { a: 'two' }, { a: 3 }]);
        await q.processAllAvailable();
        assert.deepEqual(q.sink('out').rows(), [
          { a: 1, half: 0.5 },
          { a: 3, half: 1.5 },
        ]);
        const [letter] = q.deadLetters();
        assert.deepEqual(letter?.row, { a: 'two' });
        assert.equal(letter?.error.code, 'INVALID_ROW');
        assert.match(letter?.error.message ?? '', /arrowUdf 'halve'.*column 'a'.*not a number/);
      } finally {
        await q.stop();
      }
    });

    it('a UDF thread that dies fails the query cleanly, leaving no thread behind', {
      skip: !isolate && 'a UDF thread exists only under isolate',
    }, async () => {
      placement = { isolate: 'true' };
      const before = workerResources();
      const q = await startQuery(new URL('../fixtures/jobs/arrow-misuse.js', import.meta.url), {
        params: { ...placement, misuse: 'crash' },
        clock: 'manual',
      });
      q.source('in').addData([{ a: 1 }]);
      await assert.rejects(q.awaitTermination(), (e: MillraceError) => {
        assert.equal(e.code, 'TASK_FAILED');
        assert.match(e.message, /UDF worker 0 ended unexpectedly/);
        return true;
      });
      await q.stop();
      assert.equal(workerResources(), before);
    });

    it('leaves no thread behind after a stop', async () => {
      const before = workerResources();
      await run({ op: 'withColumn', udfWorkers: '2', partitions: '2' }, readings(0, 5));
      assert.equal(workerResources(), before);
    });

    it(`starts ${isolate ? 'the UDF threads' : 'no UDF thread'}`, async () => {
      const q = await startQuery(job, {
        params: { ...placement, op: 'withColumn', udfWorkers: '2', partitions: '2' },
      });
      try {
        assert.equal(q.topology().udfWorkers, isolate ? 2 : 0);
      } finally {
        await q.stop();
      }
    });
  });
}

describe('mapPartitions', () => {
  it('gets the rows of each partition of a trigger at once, in micro-batch mode', async () => {
    const q = await startQuery(job, {
      params: { op: 'mapPartitions', trigger: 'microBatch' },
      clock: 'manual',
    });
    try {
      q.source<Reading>('readings').addData(readings(0, 5));
      await q.processAllAvailable();
      q.source<Reading>('readings').addData(readings(5, 7));
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').epochs(), [
        { epochId: 0, rows: [{ count: 5, ids: [0, 1, 2, 3, 4] }] },
        { epochId: 1, rows: [{ count: 2, ids: [5, 6] }] },
      ]);
    } finally {
      await q.stop();
    }
  });

  it('is refused in real-time mode, before any thread starts, pointing to UDFs', async () => {
    const before = workerResources();
    await assert.rejects(
      startQuery(job, { params: { op: 'mapPartitions' }, clock: 'manual' }),
      (e: MillraceError) => {
        assert.equal(e.code, 'REAL_TIME_MODE_UNSUPPORTED_OPERATOR');
        assert.match(e.message, /mapPartitions#1.*arrowUdf/);
        return true;
      },
    );
    assert.equal(workerResources(), before);
  });
});
