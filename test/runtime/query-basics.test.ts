import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { type StreamingQueryProgress, startQuery, streams } from '../../src/index.js';

const compiledJob = new URL('../fixtures/jobs/stateless.js', import.meta.url);
const typescriptJob = new URL('../../../test/fixtures/jobs/stateless.ts', import.meta.url);

const rows = [
  { txId: 't1', cardId: 'c1', amount: 10.5, country: 'FR' },
  { txId: 't2', cardId: 'c2', amount: -1, country: 'FR' },
  { txId: 't3', cardId: 'c1', amount: 2, country: 'DE' },
];
const expected = [
  { txId: 't1', cardId: 'c1', amount: 10.5, country: 'FR', cents: 1050 },
  { txId: 't3', cardId: 'c1', amount: 2, country: 'DE', cents: 200 },
];

describe('a stateless query', () => {
  it('filters and maps rows added to a memory source into a memory sink', async () => {
    const q = await startQuery(compiledJob);
    const started = once(q, 'started');
    try {
      await started;
      q.source('payments').addData(rows);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), expected);
      assert.equal(q.status.state, 'active');
    } finally {
      await q.stop();
    }
    assert.equal(q.status.state, 'terminated');
    assert.equal(q.exception, null);
    assert.deepEqual(q.sink('out').rows(), expected, 'the sink stays readable after stop');
  });

  it('runs a job module written in TypeScript, in the driver and in every worker', async () => {
    const q = await startQuery(typescriptJob, { params: { partitions: 2 } });
    try {
      q.source('payments').addData(rows.slice(0, 2), 0);
      q.source('payments').addData(rows.slice(2), 1);
      await q.processAllAvailable();
      assert.deepEqual(q.sink('out').rows(), expected);
    } finally {
      await q.stop();
    }
  });

  it('leaves no worker thread, port or timer behind once stopped', async () => {
    const count = () => {
      const kinds: Record<string, number> = { MessagePort: 0, Timeout: 0, Immediate: 0, Worker: 0 };
      for (const r of process.getActiveResourcesInfo()) if (r in kinds) kinds[r]!++;
      return kinds;
    };
    const before = count();
    const q = await startQuery(compiledJob);
    q.source('payments').addData(rows);
    await q.processAllAvailable();
    assert.ok(count().MessagePort! > before.MessagePort!, 'a running query holds ports to its workers');
    await q.stop();
    assert.deepEqual(count(), before);
  });

  it('reports progress each interval with Spark field names, and idle intervals', async () => {
    const q = await startQuery(compiledJob, { clock: 'manual', clockStart: Date.UTC(2026, 0, 1) });
    const seen: StreamingQueryProgress[] = [];
    const listener = { onQueryProgress: (p: StreamingQueryProgress) => seen.push(p) };
    streams.addListener(listener);
    try {
      q.source('payments').addData(rows);
      await q.processAllAvailable();
      const progress = once(q, 'progress');
      q.clock.advance(1000);
      const [p] = (await progress) as [StreamingQueryProgress];
      assert.equal(p.id, q.id);
      assert.equal(p.runId, q.runId);
      assert.equal(p.timestamp, '2026-01-01T00:00:01.000Z');
      assert.equal(p.batchDuration, 1000);
      assert.equal(p.numInputRows, 3);
      assert.equal(p.inputRowsPerSecond, 3);
      assert.equal(p.sink.numOutputRows, 2);
      assert.deepEqual(p.sources[0]?.startOffset, { 0: 0 });
      assert.deepEqual(p.sources[0]?.endOffset, { 0: 3 });
      assert.deepEqual(p.sources[0]?.latestOffset, { 0: 3 });
      assert.equal(p.sources[0]?.description, 'MemoryStream[payments]');
      assert.ok(p.latencyMs.e2e.p50 > 0, 'e2e latency was measured');
      assert.ok(p.latencyMs.e2e.max >= p.latencyMs.e2e.p99);
      assert.deepEqual(Object.keys(p.latencyMs).sort(), ['e2e', 'processing', 'sourceQueuing']);
      assert.deepEqual(p.badRecords, { skipped: 0, deadLettered: 0 });
      assert.equal(q.lastProgress, p);
      assert.deepEqual(seen, [p], 'process-wide listeners see the same progress');

      const idle = once(q, 'idle');
      q.clock.advance(1000);
      const [quiet] = (await idle) as [StreamingQueryProgress];
      assert.equal(quiet.numInputRows, 0);
      assert.equal(q.recentProgress.length, 2);
      assert.equal(q.status.message, 'Waiting for data to arrive');
    } finally {
      streams.removeListener(listener);
      await q.stop();
    }
  });

  it('tells the test which memory sources and sinks exist when a name is wrong', async () => {
    const q = await startQuery(compiledJob);
    try {
      assert.throws(() => q.source('nope'), { code: 'UNKNOWN_SOURCE', message: /has: payments/ });
      assert.throws(() => q.sink('nope'), { code: 'UNKNOWN_SINK', message: /has: out/ });
      assert.throws(() => q.source('payments').addData([{}], 5), { code: 'INVALID_ARGUMENT' });
      assert.throws(() => q.clock, { code: 'CLOCK_NOT_MANUAL' });
    } finally {
      await q.stop();
    }
    assert.throws(() => q.source('payments').addData([{}]), { code: 'QUERY_NOT_ACTIVE' });
  });
});
