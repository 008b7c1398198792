import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobContext, type Stream, sinks, sources } from '../../src/index.js';
import { analyze, watermarkColumnReaches } from '../../src/plan/analyze.js';

type Tx = { txId: string; ts: number; n: number };

const job = () => new JobContext({});
const read = (j: JobContext, name: string): Stream<Tx> => j.readStream(sources.memory<Tx>({ name }));

/** Whether the watermark on `ts` reaches the plan's deduplication with its column as it was. */
function reaches(build: (watermarked: Stream<Tx>, j: JobContext) => Stream<any>): boolean {
  const j = job();
  const stream = build(read(j, 'txs').withWatermark('ts', '10 seconds'), j).dropDuplicates();
  const plan = analyze(stream.writeStream(sinks.memory({ name: 'out' })).definition);
  const dedup = plan.operators.find((op) => op.node.kind === 'dedup')!;
  const w = plan.watermarks[0]!;
  assert.ok(plan.watermarksAbove[dedup.id]!.includes(w.index), 'the watermark is above the deduplication');
  return watermarkColumnReaches(plan, dedup, w);
}

describe('a watermarked column reaching an operator', () => {
  it('reaches it straight after the watermark, through filters, repartitions and withColumn of another column', () => {
    assert.equal(
      reaches((s) => s),
      true,
    );
    assert.equal(
      reaches((s) =>
        s
          .filter((t) => t.n > 0)
          .repartition('txId', 4)
          .withColumn('m', (t: Tx) => t.n * 2),
      ),
      true,
    );
  });

  it('reaches it through a select that keeps the column under its name', () => {
    assert.equal(
      reaches((s) => s.select('txId', 'ts')),
      true,
    );
    assert.equal(
      reaches((s) => s.select('txId')),
      false,
      'a select without it drops it',
    );
    assert.equal(
      reaches((s) => s.select({ txId: 'txId', ts: 'n' })),
      false,
      'a select that fills it from another column changes it',
    );
  });

  it('does not reach it through a withColumn of the column itself or a map', () => {
    assert.equal(
      reaches((s) => s.withColumn('ts', (t: Tx) => t.ts + 1)),
      false,
    );
    assert.equal(
      reaches((s) => s.map((t) => ({ ...t }))),
      false,
    );
  });

  it('reaches it through a union only when every side that carries the watermark keeps it', () => {
    assert.equal(
      reaches((s, j) => s.union(read(j, 'more'))),
      true,
    );
    assert.equal(
      reaches((s, j) => s.map((t) => t).union(read(j, 'more'))),
      false,
    );
  });
});
