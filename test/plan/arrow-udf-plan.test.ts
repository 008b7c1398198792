import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  arrowUdf,
  JobContext,
  lit,
  MillraceError,
  type Stream,
  sinks,
  sources,
  Trigger,
  type TriggerSpec,
  udf,
} from '../../src/index.js';
import { analyze } from '../../src/plan/analyze.js';
import { batchSizeOf, checkBatchSize } from '../../src/plan/arrow-udf.js';
import { describeExpr } from '../../src/plan/expressions.js';
import { planFingerprint } from '../../src/plan/fingerprint.js';
import { explain, planPhysical, runsArrowCode, runsOnUdfThreads } from '../../src/plan/physical.js';
import { DEFAULT_QUERY_OPTIONS, resolveQueryOptions } from '../../src/plan/query-options.js';

type Payment = { card: string; amount: number };

const payments = (): Stream<Payment> =>
  new JobContext({}).readStream(sources.memory<Payment>({ name: 'in', partitions: 2 }));

const cents = (t: any) =>
  t
    .getChild('amount')
    .toArray()
    .map((a: number) => a * 100);

const plan = (stream: Stream, trigger: TriggerSpec = Trigger.realTime()) =>
  analyze(stream.writeStream(sinks.memory({ name: 'out' })).trigger(trigger).definition);

function refusal(fn: () => unknown): MillraceError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof MillraceError, `expected a MillraceError, got ${e}`);
    return e;
  }
  assert.fail('expected an error');
}

describe('arrowUdf at plan time', () => {
  it('keeps its input columns, declared types, return type and batch size, frozen', () => {
    const call = arrowUdf(cents, {
      input: ['amount', 'card'],
      inputTypes: { amount: 'float64' },
      returns: 'float64',
      maxRecordsPerBatch: 500,
    });
    assert.equal(call.kind, 'arrowUdf');
    assert.equal(call.name, 'cents', 'named after its function by default');
    assert.deepEqual(call.input, ['amount', 'card']);
    assert.deepEqual(call.inputTypes, { amount: 'float64' });
    assert.equal(call.returns, 'float64');
    assert.equal(call.maxRecordsPerBatch, 500);
    assert.ok(Object.isFrozen(call) && Object.isFrozen(call.input) && Object.isFrozen(call.inputTypes));
  });

  it('takes its name from the options, else its function, else calls itself arrowUdf', () => {
    assert.equal(arrowUdf(cents, { input: ['amount'], returns: 'float64', name: 'toCents' }).name, 'toCents');
    assert.equal(arrowUdf(cents, { input: ['amount'], returns: 'float64' }).name, 'cents');
    assert.equal(
      arrowUdf(
        Object.defineProperty(() => [], 'name', { value: '' }),
        {
          input: ['amount'],
          returns: 'float64',
        },
      ).name,
      'arrowUdf',
    );
  });

  it('leaves the batch size to the query when the UDF does not set one', () => {
    assert.equal(arrowUdf(cents, { input: ['amount'], returns: 'float64' }).maxRecordsPerBatch, undefined);
  });

  it('accepts an Arrow DataType-like object as a return type', () => {
    const call = arrowUdf(cents, { input: ['amount'], returns: { typeId: 3 } });
    assert.deepEqual(call.returns, { typeId: 3 });
  });

  it('refuses options it cannot use, as an invalid argument naming the UDF', () => {
    const cases: [string, () => unknown, RegExp][] = [
      [
        'no function',
        () => arrowUdf('cents' as never, { input: ['amount'], returns: 'float64' }),
        /fn must be a function/,
      ],
      ['no options', () => arrowUdf(cents, undefined as never), /options \{ input, returns \} are required/],
      [
        'no input',
        () => arrowUdf(cents, { returns: 'float64' } as never),
        /'cents': input must be a non-empty array/,
      ],
      [
        'an empty input',
        () => arrowUdf(cents, { input: [], returns: 'float64' }),
        /input must be a non-empty array/,
      ],
      ['an empty column name', () => arrowUdf(cents, { input: [''], returns: 'float64' }), /input must be/],
      [
        'a column named twice',
        () => arrowUdf(cents, { input: ['amount', 'card', 'amount'], returns: 'float64' }),
        /'cents': input names a column twice/,
      ],
      [
        'an unknown return type',
        () => arrowUdf(cents, { input: ['amount'], returns: 'decimal' as never }),
        /'cents': returns must be an Arrow DataType or one of float64, .*"decimal"/,
      ],
      [
        'no return type',
        () => arrowUdf(cents, { input: ['amount'] } as never),
        /returns must be an Arrow DataType/,
      ],
      [
        'a type for a column that is not an input',
        () => arrowUdf(cents, { input: ['amount'], inputTypes: { card: 'utf8' }, returns: 'float64' }),
        /inputTypes names 'card', which is not an input column/,
      ],
      [
        'an unknown input type',
        () =>
          arrowUdf(cents, {
            input: ['amount'],
            inputTypes: { amount: 'double' as never },
            returns: 'float64',
          }),
        /inputTypes\.amount must be an Arrow DataType/,
      ],
      [
        'a batch size of 0',
        () => arrowUdf(cents, { input: ['amount'], returns: 'float64', maxRecordsPerBatch: 0 }),
        /'cents': maxRecordsPerBatch must be an integer from 1 to 1000000, got 0/,
      ],
      [
        'a fractional batch size',
        () => arrowUdf(cents, { input: ['amount'], returns: 'float64', maxRecordsPerBatch: 1.5 }),
        /maxRecordsPerBatch must be an integer from 1 to 1000000, got 1\.5/,
      ],
      [
        'an empty name',
        () => arrowUdf(cents, { input: ['amount'], returns: 'float64', name: '' }),
        /name must be/,
      ],
    ];
    for (const [what, fn, message] of cases) {
      const e = refusal(fn);
      assert.equal(e.code, 'INVALID_ARGUMENT', what);
      assert.match(e.message, message, what);
    }
  });

  it('cannot be the argument of a scalar udf: it is a whole column', () => {
    const score = arrowUdf(cents, { input: ['amount'], returns: 'float64' });
    const round = udf('round', (x: number) => Math.round(x));
    const e = refusal(() => round(score));
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.match(
      e.message,
      /^round\(\.\.\.\): an Arrow UDF is a whole column; it cannot be a scalar UDF's argument$/,
    );
    assert.doesNotThrow(() => round('amount'));
  });

  it('reads in plans as arrowUdf, its name and its input columns', () => {
    const score = arrowUdf(cents, { name: 'score', input: ['amount', 'card'], returns: 'float64' });
    assert.equal(describeExpr(score), 'arrowUdf score(amount, card)');
    const analyzed = plan(payments().withColumn('score', score));
    const text = explain(analyzed, planPhysical(analyzed, { defaultShufflePartitions: 2, wholeRows: false }));
    assert.equal(
      text,
      [
        'Stage 0 (2 partitions) <- source MemoryStream[in]',
        '  withColumn#1',
        '  -> sink MemorySink[out] (append)',
      ].join('\n'),
      'an Arrow UDF column fuses into the stage like any other',
    );
  });
});

describe('checkBatchSize and batchSizeOf', () => {
  it('accepts integers from 1 to 1000000, and undefined as “the query’s setting”', () => {
    assert.equal(checkBatchSize(undefined, 'x'), undefined);
    assert.equal(checkBatchSize(1, 'x'), 1);
    assert.equal(checkBatchSize(1_000_000, 'x'), 1_000_000);
    for (const bad of [0, -1, 1.5, 1_000_001, Number.NaN, '10', null]) {
      assert.throws(() => checkBatchSize(bad, 'where'), {
        code: 'INVALID_ARGUMENT',
        message: /^where: maxRecordsPerBatch must be an integer from 1 to 1000000/,
      });
    }
  });

  it('takes the operator’s size, else the query’s, else 1 in real-time and 10000 in micro-batch mode', () => {
    assert.equal(batchSizeOf(7, 300, false), 7);
    assert.equal(batchSizeOf(7, 300, true), 7);
    assert.equal(batchSizeOf(undefined, 300, false), 300);
    assert.equal(batchSizeOf(undefined, 300, true), 300);
    assert.equal(batchSizeOf(undefined, undefined, false), 1);
    assert.equal(batchSizeOf(undefined, undefined, true), 10_000);
  });
});

describe('mapInArrow and mapPartitions at plan time', () => {
  it('checks mapInArrow’s function and batch size', () => {
    assert.throws(() => payments().mapInArrow(42 as never), {
      code: 'INVALID_ARGUMENT',
      message: /mapInArrow: expected a function/,
    });
    assert.throws(() => payments().mapInArrow((b) => b, { maxRecordsPerBatch: 0 }), {
      code: 'INVALID_ARGUMENT',
      message: /^mapInArrow: maxRecordsPerBatch must be an integer/,
    });
    const node = payments().mapInArrow((b) => b, { maxRecordsPerBatch: 64 }).node;
    assert.equal(node.kind === 'mapInArrow' && node.maxRecordsPerBatch, 64);
    assert.throws(() => payments().mapPartitions('x' as never), {
      code: 'INVALID_ARGUMENT',
      message: /mapPartitions: expected a function/,
    });
  });

  it('refuses mapPartitions in real-time mode, pointing to arrowUdf and mapInArrow', () => {
    const e = refusal(() =>
      plan(
        payments()
          .filter((p) => p.amount > 0)
          .mapPartitions((rows) => rows),
      ),
    );
    assert.equal(e.code, 'REAL_TIME_MODE_UNSUPPORTED_OPERATOR');
    assert.match(e.message, /^mapPartitions#2 holds all the rows of a partition until its batch ends/);
    assert.match(e.message, /arrowUdf \/ mapInArrow/);
    assert.match(e.message, /or a micro-batch trigger$/);
  });

  it('names a labelled mapPartitions in the refusal', () => {
    const e = refusal(() => plan(payments().mapPartitions((rows) => rows, { name: 'dedupe' })));
    assert.match(e.message, /^mapPartitions#1 'dedupe' holds/);
  });

  it('accepts mapPartitions with a micro-batch trigger', () => {
    for (const trigger of [Trigger.processingTime('1 second'), Trigger.availableNow(), Trigger.once()]) {
      const analyzed = plan(
        payments().mapPartitions((rows) => rows),
        trigger,
      );
      assert.deepEqual(
        analyzed.operators.map((o) => o.node.kind),
        ['source', 'mapPartitions'],
      );
    }
  });

  it('accepts the Arrow operators in real-time mode', () => {
    const score = arrowUdf(cents, { input: ['amount'], returns: 'float64' });
    assert.doesNotThrow(() =>
      plan(
        payments()
          .withColumn('score', score)
          .mapInArrow((b) => b),
      ),
    );
  });
});

describe('runsArrowCode and runsOnUdfThreads', () => {
  const score = arrowUdf(cents, { input: ['amount'], returns: 'float64' });
  const isolated = arrowUdf(cents, { input: ['amount'], returns: 'float64', isolate: true });
  const double = udf('double', (a: number) => a * 2);

  it('find Arrow code in mapInArrow and in withColumn or select with an Arrow UDF', () => {
    assert.equal(runsArrowCode(payments().mapInArrow((b) => b).node), true);
    assert.equal(runsArrowCode(payments().withColumn('score', score).node), true);
    assert.equal(runsArrowCode(payments().select({ card: 'card', score }).node), true);
  });

  it('put Arrow code on the task thread unless it or the query says isolate', () => {
    assert.equal(runsOnUdfThreads(payments().mapInArrow((b) => b).node, false), false);
    assert.equal(runsOnUdfThreads(payments().withColumn('score', score).node, false), false);
    assert.equal(runsOnUdfThreads(payments().mapInArrow((b) => b, { isolate: true }).node, false), true);
    assert.equal(runsOnUdfThreads(payments().withColumn('score', isolated).node, false), true);
    assert.equal(runsOnUdfThreads(payments().select({ card: 'card', score, isolated }).node, false), true);
    assert.equal(runsOnUdfThreads(payments().withColumn('score', score).node, true), true);
    assert.throws(() => arrowUdf(cents, { input: ['amount'], returns: 'float64', isolate: 1 as never }), {
      code: 'INVALID_ARGUMENT',
      message: /isolate must be true or false/,
    });
  });

  it('find none in any other operator and expression', () => {
    const others = [
      payments(),
      payments().map((p) => p),
      payments().filter(() => true),
      payments().flatMap((p) => [p]),
      payments().mapPartitions((rows) => rows),
      payments().withColumn('cents', (p) => p.amount * 100),
      payments().withColumn('twice', double('amount')),
      payments().withColumn('source', lit('web')),
      payments().withColumn('copy', 'amount'),
      payments().select('card', 'amount'),
      payments().select({ card: 'card', twice: double('amount'), cents: (p: Payment) => p.amount }),
      payments().repartition('card'),
    ];
    for (const stream of others) {
      assert.equal(runsArrowCode(stream.node), false, stream.node.kind);
      assert.equal(runsOnUdfThreads(stream.node, true), false, stream.node.kind);
    }
  });
});

describe('plan fingerprints with Arrow UDFs', () => {
  const scored = (
    fn: (t: any) => unknown,
    options: { maxRecordsPerBatch?: number; returns?: 'float64' | 'int64' } = {},
  ) =>
    plan(
      payments()
        .withColumn(
          'score',
          arrowUdf(fn, { input: ['amount'], returns: options.returns ?? 'float64', ...options }),
        )
        .select({
          card: 'card',
          score: 'score',
          again: arrowUdf(fn, { input: ['amount'], returns: 'float64' }),
        }),
    );
  const selectOnly = (fn: (t: any) => unknown) =>
    plan(payments().select({ card: 'card', score: arrowUdf(fn, { input: ['amount'], returns: 'float64' }) }));
  const mapped = (fn: (b: any) => unknown, maxRecordsPerBatch?: number) =>
    plan(payments().mapInArrow(fn, { maxRecordsPerBatch }));

  it('tells two plans apart by an Arrow UDF’s body only with code', () => {
    const a = (t: any) => t.getChild('amount').toArray();
    const b = (t: any) =>
      t
        .getChild('amount')
        .toArray()
        .map((x: number) => x + 1);
    assert.equal(planFingerprint(scored(a), true), planFingerprint(scored(a), true));
    assert.notEqual(planFingerprint(scored(a), true), planFingerprint(scored(b), true));
    assert.equal(planFingerprint(scored(a), false), planFingerprint(scored(b), false));
    assert.notEqual(planFingerprint(selectOnly(a), true), planFingerprint(selectOnly(b), true));
    assert.equal(planFingerprint(selectOnly(a), false), planFingerprint(selectOnly(b), false));
    assert.notEqual(planFingerprint(mapped(a), true), planFingerprint(mapped(b), true));
    assert.equal(planFingerprint(mapped(a), false), planFingerprint(mapped(b), false));
  });

  it('tells plans apart by an Arrow UDF’s columns, type or batch size even without code', () => {
    const base = planFingerprint(scored(cents), false);
    assert.notEqual(planFingerprint(scored(cents, { maxRecordsPerBatch: 10 }), false), base);
    assert.notEqual(planFingerprint(scored(cents, { returns: 'int64' }), false), base);
    const otherInput = plan(
      payments()
        .withColumn('score', arrowUdf(cents, { input: ['card'], returns: 'float64' }))
        .select({
          card: 'card',
          score: 'score',
          again: arrowUdf(cents, { input: ['amount'], returns: 'float64' }),
        }),
    );
    assert.notEqual(planFingerprint(otherInput, false), base);
    assert.notEqual(planFingerprint(mapped(cents, 10), false), planFingerprint(mapped(cents), false));
  });

  it('tells an Arrow UDF column from a function column of the same name without code', () => {
    const arrow = plan(
      payments().withColumn('score', arrowUdf(cents, { input: ['amount'], returns: 'float64' })),
    );
    const perRow = plan(payments().withColumn('score', (p) => p.amount * 100));
    assert.notEqual(planFingerprint(arrow, false), planFingerprint(perRow, false));
  });

  it('keeps the fingerprint without code of plans without Arrow UDFs as checkpoints recorded it', () => {
    // Values recorded for these plans before Arrow UDFs existed: a checkpoint made then must still match.
    const double = udf('double', (a: number) => a * 2);
    const withScalarUdf = plan(payments().withColumn('twice', double('amount')));
    const withFunction = plan(payments().withColumn('cents', (p) => p.amount * 100));
    const selected = plan(
      payments().select({
        card: 'card',
        twice: double('amount'),
        cents: (p: Payment) => p.amount,
        web: lit('web'),
      }),
    );
    assert.equal(planFingerprint(withScalarUdf, false), 'd21c9b900f16a9434893e50fda20b0cd');
    assert.equal(planFingerprint(withFunction, false), 'cd083a5c35d0473a1ce2c33fa3fc0eeb');
    assert.equal(planFingerprint(selected, false), 'f51a4403d26ed77383e744ae415ee6c6');
  });

  it('tells two scalar udf columns apart by their bodies only with code', () => {
    const a = plan(payments().withColumn('x', udf('f', (v: number) => v + 1)('amount')));
    const b = plan(payments().withColumn('x', udf('f', (v: number) => v + 2)('amount')));
    assert.notEqual(planFingerprint(a, true), planFingerprint(b, true));
    assert.equal(planFingerprint(a, false), planFingerprint(b, false));
  });
});

describe('query options for Arrow UDFs', () => {
  it('defaults to one UDF thread and leaves the batch size to the trigger', () => {
    assert.equal(DEFAULT_QUERY_OPTIONS.udfWorkers, 1);
    assert.equal(DEFAULT_QUERY_OPTIONS.arrowMaxRecordsPerBatch, undefined);
    const w = payments().writeStream(sinks.memory({ name: 'out' }));
    assert.equal(w.definition.options.udfWorkers, 1);
    assert.equal(w.definition.options.arrowMaxRecordsPerBatch, undefined);
  });

  it('takes a positive integer of UDF threads and a batch size from 1 to 1000000', () => {
    const options = resolveQueryOptions(DEFAULT_QUERY_OPTIONS, { udfWorkers: 4, arrowMaxRecordsPerBatch: 1 });
    assert.equal(options.udfWorkers, 4);
    assert.equal(options.arrowMaxRecordsPerBatch, 1);
    assert.equal(
      resolveQueryOptions(DEFAULT_QUERY_OPTIONS, { arrowMaxRecordsPerBatch: 1_000_000 })
        .arrowMaxRecordsPerBatch,
      1_000_000,
    );
    const w = payments()
      .writeStream(sinks.memory({ name: 'out' }))
      .options({ udfWorkers: 2 })
      .option('arrowMaxRecordsPerBatch', 256);
    assert.equal(w.definition.options.udfWorkers, 2);
    assert.equal(w.definition.options.arrowMaxRecordsPerBatch, 256);
  });

  it('refuses a UDF thread count that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, '2']) {
      assert.throws(() => resolveQueryOptions(DEFAULT_QUERY_OPTIONS, { udfWorkers: bad as never }), {
        code: 'INVALID_ARGUMENT',
        message: /^udfWorkers must be a positive integer/,
      });
    }
  });

  it('refuses a batch size outside 1 to 1000000 or not an integer', () => {
    for (const bad of [0, 1.5, 1_000_001, -3, '100']) {
      assert.throws(
        () => resolveQueryOptions(DEFAULT_QUERY_OPTIONS, { arrowMaxRecordsPerBatch: bad as never }),
        {
          code: 'INVALID_ARGUMENT',
          message: /^arrowMaxRecordsPerBatch: maxRecordsPerBatch must be an integer from 1 to 1000000/,
        },
      );
    }
  });

  it('lists the options among the known ones when an unknown option is passed', () => {
    assert.throws(() => resolveQueryOptions(DEFAULT_QUERY_OPTIONS, { udfThreads: 2 } as never), {
      code: 'INVALID_ARGUMENT',
      message:
        /unknown query option 'udfThreads' \(known: .*udfWorkers, isolateUdfs, arrowMaxRecordsPerBatch/,
    });
  });

  it('runs Arrow code on the task thread unless isolateUdfs says otherwise, and takes only a boolean', () => {
    assert.equal(DEFAULT_QUERY_OPTIONS.isolateUdfs, false);
    assert.equal(resolveQueryOptions(DEFAULT_QUERY_OPTIONS, { isolateUdfs: true }).isolateUdfs, true);
    assert.throws(() => resolveQueryOptions(DEFAULT_QUERY_OPTIONS, { isolateUdfs: 'yes' } as never), {
      code: 'INVALID_ARGUMENT',
      message: /isolateUdfs must be true or false/,
    });
  });
});
