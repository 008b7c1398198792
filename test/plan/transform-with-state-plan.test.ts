import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  JobContext,
  MillraceError,
  type ProcessorHandle,
  StatefulProcessor,
  sinks,
  sources,
  Trigger,
} from '../../src/index.js';
import { analyze } from '../../src/plan/analyze.js';

class Echo extends StatefulProcessor<string, { k: string; ts: number }, unknown> {
  init(h: ProcessorHandle) {
    h.valueState('seen', { ttl: '1 minute' });
    h.mapState('perMerchant');
  }
  handleInputRows(_key: string, rows: Iterable<unknown>) {
    return rows;
  }
}

const stream = () => new JobContext({}).readStream(sources.memory<{ k: string; ts: number }>({ name: 'in' }));

function refusal(fn: () => unknown): MillraceError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof MillraceError);
    return e;
  }
  assert.fail('expected a plan-time error');
}

describe('transformWithState at plan time', () => {
  it('learns the state schema from init() on the driver, and shuffles by the key', () => {
    const out = stream()
      .groupByKey((r) => r.k)
      .transformWithState(new Echo(), { timeMode: 'none', outputMode: 'append' });
    assert.equal(out.node.kind, 'transformWithState');
    assert.deepEqual(out.node.kind === 'transformWithState' ? out.node.states : [], [
      { name: 'seen', kind: 'value', ttlMs: 60_000 },
      { name: 'perMerchant', kind: 'map', ttlMs: null },
    ]);
  });

  it('refuses an output mode other than the one the processor declares, and complete mode', () => {
    for (const mode of ['update', 'complete'] as const) {
      const e = refusal(() =>
        analyze(
          stream()
            .groupByKey((r) => r.k)
            .transformWithState(new Echo(), { timeMode: 'none', outputMode: 'append' })
            .writeStream(sinks.memory({ name: 'out' }))
            .outputMode(mode)
            .trigger(Trigger.processingTime('1 second')).definition,
        ),
      );
      assert.equal(e.code, 'OUTPUT_MODE_NOT_SUPPORTED');
      assert.match(e.message, /transformWithState#1/);
      assert.match(e.message, /modes that work here: append$/);
    }
  });

  it('refuses event-time timers without a watermark', () => {
    const e = refusal(() =>
      analyze(
        stream()
          .groupByKey((r) => r.k)
          .transformWithState(new Echo(), { timeMode: 'eventTime', outputMode: 'append' })
          .writeStream(sinks.memory({ name: 'out' })).definition,
      ),
    );
    assert.equal(e.code, 'UNSUPPORTED_OPERATION');
    assert.match(e.message, /withWatermark/);
  });

  it('checks its arguments as the plan is built', () => {
    const keyed = stream().groupByKey((r) => r.k);
    const opts = { timeMode: 'none', outputMode: 'append' } as const;
    assert.throws(() => keyed.transformWithState({} as never, opts), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => keyed.transformWithState(new Echo(), { ...opts, timeMode: 'wall' as never }), {
      code: 'INVALID_ARGUMENT',
      message: /timeMode/,
    });
    assert.throws(() => keyed.transformWithState(new Echo(), { ...opts, outputMode: 'complete' as never }), {
      code: 'INVALID_ARGUMENT',
    });
    class Twice extends Echo {
      override init(h: ProcessorHandle) {
        h.valueState('a');
        h.listState('a');
      }
    }
    assert.throws(() => keyed.transformWithState(new Twice(), opts), {
      code: 'INVALID_ARGUMENT',
      message: /already/,
    });
    assert.throws(() => stream().groupByKey('k' as never), { code: 'INVALID_ARGUMENT' });
  });
});
