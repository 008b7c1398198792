import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KafkaSinkSpec, KafkaSourceSpec } from '../../src/connectors/spec.js';
import { agg, ErrorCode, JobContext, sinks, sources, window } from '../../src/index.js';
import type { QueryDefinition } from '../../src/plan/job.js';
import { type LogicalNode, nodeInputs } from '../../src/plan/nodes.js';
import { cutPlan, findCut, type PlanCut } from '../../src/runtime/group/cut-plan.js';

interface Payment {
  card: string;
  amount: number;
  ts: number;
}

const payments = () =>
  new JobContext({}).readStream(
    sources.kafka<Payment>({ name: 'payments', brokers: 'localhost:9', topic: 'in', valueOnly: true }),
  );
const out = sinks.kafka({ brokers: 'localhost:9', topic: 'out', exactlyOnce: true });

const counted = (): QueryDefinition =>
  payments()
    .filter((p) => p.amount > 0)
    .withWatermark('ts', '5 seconds')
    .groupBy(window('ts', '10 seconds'), 'card')
    .agg({ n: agg.count() })
    .writeStream(out)
    .outputMode('update').definition;

/** The kinds from the sink's side down to the source. */
const kinds = (root: LogicalNode): string[] => {
  const seen: string[] = [];
  for (let n: LogicalNode | undefined = root; n !== undefined; n = nodeInputs(n)[0]) seen.push(n.kind);
  return seen;
};

const stage = (s: 0 | 1, task = 2): PlanCut => ({
  stage: s,
  topic: 'millrace-q-stage-1-repartition',
  partitions: 6,
  task,
});

describe('cutting a group’s plan at its first keyed operator', () => {
  it('leaves a plan without a keyed operator whole', () => {
    const d = payments()
      .map((p) => ({ value: p }))
      .writeStream(out).definition;
    assert.equal(findCut(d), null);
    assert.equal(cutPlan(d, stage(0)), d);
  });

  it('ends stage 0 below the aggregation, writing each row to the partition of its card', () => {
    const d = cutPlan(counted(), stage(0));
    assert.deepEqual(kinds(d.root), ['map', 'watermark', 'filter', 'source']);
    const sink = d.sink as KafkaSinkSpec;
    assert.deepEqual(
      [sink.topic, sink.valueEncoding, sink.exactlyOnce, sink.timestamp, d.outputMode],
      ['millrace-q-stage-1-repartition', 'msgpack', true, 'source', 'append'],
    );
    const route = (d.root as { fn: (r: Payment) => { value: Payment; partition: number } }).fn;
    const a = route({ card: 'c1', amount: 1, ts: 0 });
    assert.deepEqual(a.value, { card: 'c1', amount: 1, ts: 0 }, 'the whole row crosses');
    assert.equal(route({ card: 'c1', amount: 99, ts: 5 }).partition, a.partition, 'one card, one partition');
    const used = new Set(
      Array.from({ length: 60 }, (_, i) => route({ card: `c${i}`, amount: i, ts: 0 }).partition),
    );
    assert.ok(used.size > 3 && [...used].every((p) => p >= 0 && p < 6), `cards spread over ${[...used]}`);
  });

  it('starts stage 1 from its partition of the repartition topic, with the watermark declared again', () => {
    const d = cutPlan(counted(), stage(1, 4));
    assert.deepEqual(kinds(d.root), ['aggregate', 'watermark', 'source']);
    const source = (nodeInputs(nodeInputs(d.root)[0]!)[0] as { source: KafkaSourceSpec }).source;
    assert.deepEqual(source.topicPartitions, [['millrace-q-stage-1-repartition', 4]]);
    assert.deepEqual(
      [source.startingOffsets, source.isolationLevel, source.valueOnly],
      ['earliest', 'read_committed', true],
    );
    const wm = nodeInputs(d.root)[0] as { column: string; delayMs: number };
    assert.deepEqual([wm.column, wm.delayMs], ['ts', 5000]);
    assert.equal(d.sink, out, 'the job’s own sink');
  });

  it('lets the topic do a repartition, and lets an operator keyed by the same column follow it', () => {
    const d = payments()
      .repartition('card')
      .dropDuplicates('card')
      .map((p) => ({ value: p }))
      .writeStream(out).definition;
    assert.deepEqual(kinds(cutPlan(d, stage(1)).root), ['map', 'dedup', 'source']);
  });

  it('refuses a second keyed operator over other columns', () => {
    const d = payments()
      .dropDuplicates('amount')
      .groupBy('card')
      .agg({ n: agg.count() })
      .writeStream(out)
      .outputMode('update').definition;
    assert.throws(
      () => findCut(d),
      (e: { code: string; message: string }) =>
        e.code === ErrorCode.UNSUPPORTED_OPERATION &&
        /aggregate above it is keyed by other columns/.test(e.message),
    );
  });

  it('refuses a union under a keyed operator', () => {
    const d = payments()
      .union(
        new JobContext({}).readStream(
          sources.kafka<Payment>({ name: 'more', brokers: 'localhost:9', topic: 'more', valueOnly: true }),
        ),
      )
      .groupBy('card')
      .agg({ n: agg.count() })
      .writeStream(out)
      .outputMode('update').definition;
    assert.throws(
      () => findCut(d),
      (e: { code: string; message: string }) =>
        e.code === ErrorCode.UNSUPPORTED_OPERATION && /union reads two streams/.test(e.message),
    );
  });
});
