import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { mergeRows, startQuery } from '../../src/index.js';
import { MERCHANTS, type Order } from '../fixtures/jobs/joins.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/joins.js', import.meta.url);
const tempDir = tempDirs('millrace-static-join');

const orders: Order[] = [
  { id: 1, merchant: 'm1', amount: 10 },
  { id: 2, merchant: 'm2', amount: 20 },
  { id: 3, merchant: 'm9', amount: 30 },
  { id: 4, merchant: null, amount: 40 },
];

/** Sorted by order id, then city, whatever partition emitted them. */
const sorted = (rows: Record<string, unknown>[]) =>
  [...rows].sort(
    (a, b) => (a.id as number) - (b.id as number) || String(a.city).localeCompare(String(b.city)),
  );

const innerRows = [
  { id: 1, merchant: 'm1', amount: 10, city: 'Oslo' },
  { id: 2, merchant: 'm2', amount: 20, city: 'Lyon' },
  { id: 2, merchant: 'm2', amount: 20, city: 'Nice' },
];
const leftOuterRows = [
  ...innerRows,
  { id: 3, merchant: 'm9', amount: 30 },
  { id: 4, merchant: null, amount: 40 },
];

async function joined(params: Record<string, string>): Promise<Record<string, unknown>[]> {
  const q = await startQuery(job, { params: { case: 'static', ...params }, clock: 'manual' });
  try {
    q.source<Order>('orders').addData(orders.slice(0, 2), 0);
    q.source<Order>('orders').addData(orders.slice(2), 1);
    await q.processAllAvailable();
    return sorted(q.sink<Record<string, unknown>>('out').rows());
  } finally {
    await q.stop();
  }
}

function tableFile(format: string): string {
  const dir = tempDir();
  const path = join(dir, `merchants.${format}`);
  const text: Record<string, string> = {
    json: MERCHANTS.map((m) => JSON.stringify(m)).join('\n'),
    csv: `merchant,city\n${MERCHANTS.map((m) => `${m.merchant},${m.city}`).join('\n')}\n`,
    jsonArray: JSON.stringify(MERCHANTS),
  };
  writeFileSync(path, text[format]!);
  return path;
}

describe('stream–static join', () => {
  for (const trigger of ['realTime', 'microBatch']) {
    it(`joins each row with the table rows of its key, inner, from a function (${trigger})`, async () => {
      assert.deepEqual(await joined({ trigger, type: 'inner' }), innerRows);
    });

    it(`keeps rows without a match (or with a null key) alone in a left outer join, from a file (${trigger})`, async () => {
      const path = tableFile('json');
      assert.deepEqual(await joined({ trigger, type: 'leftOuter', table: 'file', path }), leftOuterRows);
    });
  }

  for (const format of ['csv', 'jsonArray']) {
    it(`reads a ${format} table file`, async () => {
      const path = tableFile(format);
      assert.deepEqual(await joined({ type: 'inner', table: 'file', path, format }), innerRows);
    });
  }

  it('fails the query at start when the table file cannot be read, naming the join', async () => {
    const path = join(tempDir(), 'missing.jsonl');
    await assert.rejects(
      (async () => {
        const q = await startQuery(job, { params: { case: 'static', table: 'file', path } });
        await q.awaitTermination();
      })(),
      { code: 'SOURCE_READ_FAILED', message: /staticJoin#\d+: loading the static table failed/ },
    );
  });

  it('fails the query at start when a CSV table file has a header it cannot read, naming the file and line', async () => {
    const path = join(tempDir(), 'merchants.csv');
    writeFileSync(path, 'merchant,"city"x\nm1,Oslo\n');
    await assert.rejects(
      (async () => {
        const q = await startQuery(job, { params: { case: 'static', table: 'file', path, format: 'csv' } });
        await q.awaitTermination();
      })(),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'SOURCE_READ_FAILED');
        assert.match(
          e.message,
          /staticJoin#\d+: loading the static table failed: .*merchants\.csv, line 1: not CSV/,
        );
        return true;
      },
    );
  });

  it('needs no shuffle: the join runs in the source stage', async () => {
    const q = await startQuery(job, { params: { case: 'static' } });
    try {
      assert.doesNotMatch(q.explain(), /shuffle/);
      assert.match(q.explain(), /staticJoin#\d+/);
    } finally {
      await q.stop();
    }
  });

  it('merges a row pair as plain data: right columns replace left ones, a missing side adds nothing', () => {
    assert.deepEqual(mergeRows({ id: 1, merchant: 'm1' }, { merchant: 'm1', city: 'Oslo' }), {
      id: 1,
      merchant: 'm1',
      city: 'Oslo',
    });
    assert.deepEqual(mergeRows({ id: 3 }, null), { id: 3 });
    assert.deepEqual(mergeRows(null, { city: 'Lyon' }), { city: 'Lyon' });
    // A row parsed from JSON may hold an own '__proto__' key: it stays a column.
    const merged = mergeRows(JSON.parse('{"id":4,"__proto__":{"polluted":true}}'), { city: 'Nice' });
    assert.equal(Object.getPrototypeOf(merged), Object.prototype);
    assert.equal((merged as { polluted?: boolean }).polluted, undefined);
    assert.deepEqual(Object.keys(merged), ['id', '__proto__', 'city']);
  });
});
