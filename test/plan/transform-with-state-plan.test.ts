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
  override init(h: ProcessorHandle) {
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

  it('takes a processor that defines only handleInputRows: a subclass without init, or a plain object', () => {
    class Passthrough extends StatefulProcessor<string, { k: string; ts: number }, unknown> {
      handleInputRows(_key: string, rows: Iterable<unknown>) {
        return rows;
      }
    }
    const plain = { handleInputRows: (_key: string, rows: Iterable<unknown>) => rows };
    for (const processor of [new Passthrough(), () => new Passthrough(), plain, () => ({ ...plain })]) {
      const out = stream()
        .groupByKey((r) => r.k)
        .transformWithState(processor as never, { timeMode: 'processingTime', outputMode: 'append' });
      assert.deepEqual(out.node.kind === 'transformWithState' ? out.node.states : null, []);
      analyze(out.writeStream(sinks.memory({ name: 'out' })).definition);
    }
  });

  it('refuses a processor without handleInputRows with INVALID_ARGUMENT naming the method', () => {
    // As JavaScript can write it: TypeScript would not compile a subclass without handleInputRows.
    const Unchecked = StatefulProcessor as unknown as new () => object;
    class InitOnly extends Unchecked {
      init(h: ProcessorHandle) {
        h.valueState('seen');
      }
    }
    const keyed = stream().groupByKey((r) => r.k);
    const opts = { timeMode: 'none', outputMode: 'append' } as const;
    for (const [processor, what] of [
      [
        new InitOnly(),
        /the processor \(class InitOnly\) has no handleInputRows\(key, rows, timerValues\) method/,
      ],
      [
        () => new InitOnly(),
        /the processor the factory returned \(class InitOnly\) has no handleInputRows\(/,
      ],
      [{ init() {} }, /the processor \(a plain object\) has no handleInputRows\(/],
    ] as const) {
      assert.throws(() => keyed.transformWithState(processor as never, opts), {
        code: 'INVALID_ARGUMENT',
        message: what,
      });
    }
    assert.throws(() => keyed.transformWithState((() => 42) as never, opts), {
      code: 'INVALID_ARGUMENT',
      message: /the factory must return a StatefulProcessor, got number/,
    });
  });

  it('refuses state and timers used in init(), and getHandle() before init, with UNSUPPORTED_OPERATION', () => {
    const keyed = stream().groupByKey((r) => r.k);
    const opts = { timeMode: 'processingTime', outputMode: 'append' } as const;
    class ReadsInInit extends Echo {
      override init(h: ProcessorHandle) {
        h.valueState<number>('n').get();
      }
    }
    class TimerInInit extends Echo {
      override init(h: ProcessorHandle) {
        h.registerTimer(0);
      }
    }
    assert.throws(() => keyed.transformWithState(new ReadsInInit(), opts), {
      code: 'UNSUPPORTED_OPERATION',
      message: /state 'n' can only be used while a key is processed, not in init\(\)/,
    });
    assert.throws(() => keyed.transformWithState(new TimerInInit(), opts), {
      code: 'UNSUPPORTED_OPERATION',
      message: /timers and the current key can only be used while a key is processed/,
    });
    assert.throws(() => new Echo().getHandle(), { code: 'UNSUPPORTED_OPERATION', message: /getHandle\(\)/ });
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

  it('refuses an eventTimeColumn without a watermark above, and carries one on through it', () => {
    const e = refusal(() =>
      analyze(
        stream()
          .groupByKey((r) => r.k)
          .transformWithState(new Echo(), { timeMode: 'none', outputMode: 'append', eventTimeColumn: 'ts' })
          .writeStream(sinks.memory({ name: 'out' })).definition,
      ),
    );
    assert.equal(e.code, 'UNSUPPORTED_OPERATION');
    assert.match(e.message, /eventTimeColumn 'ts' carries the watermark on .* needs withWatermark/);
    const plan = analyze(
      stream()
        .withWatermark('ts', '1 second')
        .groupByKey((r) => r.k)
        .transformWithState(new Echo(), {
          timeMode: 'eventTime',
          outputMode: 'append',
          eventTimeColumn: 'ts',
        })
        .writeStream(sinks.memory({ name: 'out' })).definition,
    );
    const tws = plan.operators.find((o) => o.node.kind === 'transformWithState')!;
    assert.deepEqual([...plan.timeColumns[tws.id]!.keys()], ['ts']);
  });

  it('refuses an eventTimeColumn that is not a column name', () => {
    const e = refusal(() =>
      stream()
        .groupByKey((r) => r.k)
        .transformWithState(new Echo(), { timeMode: 'none', outputMode: 'append', eventTimeColumn: '' }),
    );
    assert.equal(e.code, 'INVALID_ARGUMENT');
  });
});
