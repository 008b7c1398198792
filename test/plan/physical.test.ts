import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agg, JobContext, sinks, sources, udf, window } from '../../src/index.js';
import { analyze } from '../../src/plan/analyze.js';
import { planFingerprint } from '../../src/plan/fingerprint.js';
import { explain, keepsWholeRows, planPhysical } from '../../src/plan/physical.js';

const build = () => {
  const job = new JobContext({});
  const risk = udf('risk', (amount: number) => amount / 100);
  return analyze(
    job
      .readStream(sources.memory<{ card: string; amount: number }>({ name: 'in', partitions: 3 }))
      .filter((p) => p.amount > 0)
      .withColumn('risk', risk('amount'))
      .repartition('card')
      .map((p) => p)
      .select('card', 'risk')
      .writeStream(sinks.memory({ name: 'out' })).definition,
  );
};

describe('physical planning', () => {
  it('fuses stateless operators into one task per stage and cuts stages at shuffles', () => {
    const plan = build();
    const physical = planPhysical(plan, { defaultShufflePartitions: 4, wholeRows: false });
    assert.equal(physical.stages.length, 2);
    const [s0, s1] = physical.stages;
    assert.deepEqual(
      s0!.chain.map((o) => o.node.kind),
      ['filter', 'withColumn'],
    );
    assert.equal(s0!.partitions, 3);
    assert.equal(s0!.output.kind, 'shuffle');
    assert.deepEqual(
      s1!.chain.map((o) => o.node.kind),
      ['map', 'select'],
    );
    assert.equal(s1!.partitions, 4, 'a repartition without a count takes the default');
    assert.equal(s1!.output.kind, 'sink');
    assert.equal(physical.tasks.length, 7);
    assert.deepEqual(physical.tasks[3], { index: 3, stage: 1, partition: 0 });
    assert.equal(
      explain(plan, physical),
      [
        'Stage 0 (3 partitions) <- source MemoryStream[in]',
        '  filter#1',
        '  withColumn#2',
        '  -> hash shuffle by card to stage 1',
        'Stage 1 (4 partitions) <- shuffle from stage 0',
        '  map#4',
        '  select#5',
        '  -> sink MemorySink[out] (append)',
      ].join('\n'),
    );
  });

  it('fingerprints the same plan identically, and user code only when asked', () => {
    assert.equal(planFingerprint(build(), true), planFingerprint(build(), true));
    const job = new JobContext({});
    const other = analyze(
      job
        .readStream(sources.memory<{ card: string; amount: number }>({ name: 'in', partitions: 3 }))
        .filter((p) => p.amount > 1)
        .withColumn('risk', udf('risk', (amount: number) => amount / 100)('amount'))
        .repartition('card')
        .map((p) => p)
        .select('card', 'risk')
        .writeStream(sinks.memory({ name: 'out' })).definition,
    );
    assert.notEqual(
      planFingerprint(other, true),
      planFingerprint(build(), true),
      'a changed filter body shows',
    );
    assert.equal(planFingerprint(other, false), planFingerprint(build(), false), 'the shape is unchanged');
  });

  it('sends an aggregation only the columns it reads, unless the query keeps whole rows', () => {
    const payments = () =>
      new JobContext({}).readStream(
        sources.memory<{ card: string; amount: number; ts: number; note: string }>({ name: 'in' }),
      );
    const windowed = analyze(
      payments()
        .withWatermark('ts', '1 second')
        .groupBy(window('ts', '1 second'), 'card')
        .agg({ n: agg.count(), high: agg.max('amount') })
        .writeStream(sinks.memory({ name: 'out' }))
        .outputMode('update').definition,
    );
    const pruned = planPhysical(windowed, { defaultShufflePartitions: 2, wholeRows: false });
    const out = pruned.stages[0]!.output;
    assert.equal(out.kind, 'shuffle');
    assert.deepEqual(out.kind === 'shuffle' && out.columns, ['card', 'ts', 'amount']);
    assert.match(
      explain(windowed, pruned),
      /-> hash shuffle by card to stage 1 \(columns card, ts, amount\)/,
    );
    const whole = planPhysical(windowed, { defaultShufflePartitions: 2, wholeRows: true });
    assert.equal(whole.stages[0]!.output.kind === 'shuffle' && whole.stages[0]!.output.columns, null);
    const deduplicated = analyze(
      payments()
        .dropDuplicates('card')
        .writeStream(sinks.memory({ name: 'out' })).definition,
    );
    const keyed = planPhysical(deduplicated, { defaultShufflePartitions: 2, wholeRows: false }).stages[0]!
      .output;
    assert.equal(keyed.kind === 'shuffle' && keyed.columns, null, 'a deduplication passes whole rows on');
  });

  it('keeps rows whole where a late row or a dead letter would keep one as it came', () => {
    assert.equal(keepsWholeRows({ onLateRow: 'drop', onBadRecord: 'fail' }), false);
    assert.equal(keepsWholeRows({ onLateRow: 'drop', onBadRecord: 'skip' }), false);
    assert.equal(keepsWholeRows({ onLateRow: 'sideOutput', onBadRecord: 'fail' }), true);
    assert.equal(keepsWholeRows({ onLateRow: 'drop', onBadRecord: 'deadLetter' }), true);
  });
});
