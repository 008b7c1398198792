import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { threadId } from 'node:worker_threads';
import { startQuery } from '../../src/index.js';
import type { Event } from '../fixtures/jobs/shuffle.js';

const job = new URL('../fixtures/jobs/shuffle.js', import.meta.url);

type Out = Event & { sourceThread: number; shuffleThread: number };

describe('a multi-stage query', () => {
  it('delivers every row exactly once, in order per key, through a shuffle spread over two workers', async () => {
    const q = await startQuery(job, { params: { partitions: 2, shufflePartitions: 3, workers: 2 } });
    try {
      assert.match(q.explain(), /Stage 0 \(2 partitions\) <- source MemoryStream\[events\]/);
      assert.match(q.explain(), /-> hash shuffle by key to stage 1/);
      assert.match(q.explain(), /Stage 1 \(3 partitions\) <- shuffle from stage 0/);
      assert.match(q.explain(), /Workers: 2/);
      const keys = 40;
      const perKey = 250;
      // Each key lives in one source partition, so its order at the source is well defined.
      for (let round = 0; round < perKey; round++) {
        const batches: Event[][] = [[], []];
        for (let k = 0; k < keys; k++) batches[k % 2]!.push({ key: `k${k}`, seq: round });
        q.source<Event>('events').addData(batches[0]!, 0);
        q.source<Event>('events').addData(batches[1]!, 1);
      }
      await q.processAllAvailable();
      const out = q.sink<Out>('out').rows();
      assert.equal(out.length, keys * perKey, 'every row arrived, none twice');
      const seqs = new Map<string, number[]>();
      for (const r of out) {
        const list = seqs.get(r.key) ?? [];
        list.push(r.seq);
        seqs.set(r.key, list);
      }
      for (const [key, list] of seqs) {
        assert.deepEqual(
          list,
          Array.from({ length: perKey }, (_, i) => i),
          `rows of ${key} in order`,
        );
      }
      const threads = new Set(out.flatMap((r) => [r.sourceThread, r.shuffleThread]));
      assert.ok(threads.size >= 2, `rows crossed at least two worker threads (saw ${[...threads]})`);
      assert.ok(!threads.has(threadId), 'no row was processed on the driver thread');
      const partitionsOfKey = new Map<string, Set<number>>();
      for (const e of q.sink<Out>('out').epochs()) assert.equal(e.epochId, 0);
      for (const r of out) {
        const s = partitionsOfKey.get(r.key) ?? new Set();
        s.add(r.shuffleThread);
        partitionsOfKey.set(r.key, s);
      }
      for (const [key, s] of partitionsOfKey)
        assert.equal(s.size, 1, `${key} was handled by one shuffle task`);
    } finally {
      await q.stop();
    }
  });

  it('holds rows back when a ring is full and delivers all of them once the consumer catches up', async () => {
    // 4 KiB rings: 5 000 rows cannot all be in flight, so producers wait for space (backpressure).
    const q = await startQuery(job, {
      params: { partitions: 1, shufflePartitions: 1, workers: 2 },
      options: { ringCapacityBytes: 4096 },
    });
    try {
      const rows = Array.from({ length: 5000 }, (_, i) => ({ key: `k${i % 7}`, seq: i }));
      q.source<Event>('events').addData(rows, 0);
      await q.processAllAvailable();
      const out = q.sink<Out>('out').rows();
      assert.equal(out.length, rows.length);
      assert.deepEqual(
        out.map((r) => r.seq).sort((a, b) => a - b),
        rows.map((r) => r.seq),
      );
    } finally {
      await q.stop();
    }
  });
});
