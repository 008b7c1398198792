import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobContext, lit, MillraceError, sinks, sources, startQuery, Trigger, udf } from '../../src/index.js';
import { analyze } from '../../src/plan/analyze.js';

const invalid = new URL('../fixtures/jobs/invalid.js', import.meta.url);
const notAJob = new URL('../fixtures/jobs/not-a-job.js', import.meta.url);

function workerResources(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'MessagePort' || r === 'Worker').length;
}

describe('plan-time validation', () => {
  it('refuses complete output mode for a query without aggregation, naming the modes that work', async () => {
    const before = workerResources();
    await assert.rejects(startQuery(invalid, { params: { case: 'complete-mode' } }), (e: unknown) => {
      assert.ok(e instanceof MillraceError);
      assert.equal(e.code, 'OUTPUT_MODE_NOT_SUPPORTED');
      assert.match(e.message, /'complete'/);
      assert.match(e.message, /modes that work here: append, update/);
      return true;
    });
    assert.equal(workerResources(), before, 'no thread was started');
  });

  it('requires build to return a writer', async () => {
    await assert.rejects(startQuery(invalid, { params: { case: 'not-a-writer' } }), { code: 'INVALID_JOB' });
  });

  it('says that the job’s build threw, naming the module, with the error as cause', async () => {
    await assert.rejects(startQuery(invalid, { params: { case: 'build-throws' } }), (e: unknown) => {
      assert.ok(e instanceof MillraceError);
      assert.equal(e.code, 'INVALID_JOB');
      assert.match(
        e.message,
        /^the job .*fixtures\/jobs\/invalid\.js failed while building its query: TypeError: Cannot read properties of null \(reading 'sink'\)$/,
      );
      assert.ok(e.cause instanceof TypeError);
      assert.match(e.cause.stack ?? '', /\n\s+at .*fixtures\/jobs\/invalid\.js/, 'the cause keeps its stack');
      return true;
    });
  });

  it('requires the job module to default-export defineJob(...)', async () => {
    await assert.rejects(startQuery(notAJob), { code: 'INVALID_JOB', message: /defineJob/ });
  });

  it('names a missing parameter and how to pass it', async () => {
    await assert.rejects(startQuery(invalid), { code: 'MISSING_PARAM', message: /--param case=/ });
  });

  it('refuses a duration it cannot read', async () => {
    await assert.rejects(startQuery(invalid, { params: { case: 'bad-duration' } }), {
      code: 'INVALID_DURATION',
      message: /'soon'/,
    });
  });

  it('reports a job file that does not exist as an invalid job', async () => {
    await assert.rejects(startQuery('/nonexistent/job.js'), { code: 'INVALID_JOB' });
  });

  it('checks builder arguments as the plan is built', () => {
    const job = new JobContext({});
    const s = job.readStream(sources.memory<{ a: number }>({ name: 'in' }));
    assert.throws(() => s.map(42 as never), {
      code: 'INVALID_ARGUMENT',
      message: /map: expected a function/,
    });
    assert.throws(() => s.repartition(''), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => s.repartition('a', 0), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => s.select(), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => s.withColumn('x', 3 as never), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => sources.memory({ name: 'bad name' }), { code: 'INVALID_SOURCE_NAME' });
    assert.throws(() => sources.rate({ rowsPerSecond: 0 }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => sources.generator({ rowsPerSecond: 1, generate: 'x' as never }), {
      code: 'INVALID_ARGUMENT',
    });
    assert.throws(() => Trigger.realTime(0), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => Trigger.realTime('often'), { code: 'INVALID_DURATION' });
    const w = s.writeStream(sinks.memory({ name: 'out' }));
    assert.throws(() => w.outputMode('sometimes' as never), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => w.options({ workers: 0 }), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => w.options({ bogus: 1 } as never), {
      code: 'INVALID_ARGUMENT',
      message: /unknown query option/,
    });
    assert.throws(() => w.onBadRecord('ignore' as never), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => udf('', () => 1), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => job.param('nope'), { code: 'MISSING_PARAM' });
    assert.throws(() => new JobContext({ n: 'x' }).param('n', 1), { code: 'INVALID_ARGUMENT' });
    assert.equal(new JobContext({ n: '7' }).param('n', 1), 7);
    assert.doesNotThrow(() => s.withColumn('x', lit(3)));
  });

  it('keeps builders immutable: every call returns a new object and leaves the old one as it was', () => {
    const job = new JobContext({});
    const a = job.readStream(sources.memory({ name: 'in' }));
    const b = a.filter(() => true);
    assert.notEqual(a, b);
    assert.equal(a.node.kind, 'source');
    assert.ok(Object.isFrozen(a) && Object.isFrozen(b.node));
    const w1 = b.writeStream(sinks.memory({ name: 'out' }));
    const w2 = w1.outputMode('update');
    assert.equal(w1.definition.outputMode, 'append');
    assert.equal(w2.definition.outputMode, 'update');
  });

  it('numbers operators by their position in the plan, whatever order the builders ran in', () => {
    const job = new JobContext({});
    const src = job.readStream(sources.memory({ name: 'in' }));
    const unused = src.map((r) => r); // a branch that is not part of the query
    const plan = analyze(
      src
        .filter(() => true)
        .map((r) => r)
        .writeStream(sinks.memory({ name: 'out' })).definition,
    );
    assert.deepEqual(
      plan.operators.map((o) => [o.id, o.node.kind]),
      [
        [0, 'source'],
        [1, 'filter'],
        [2, 'map'],
      ],
    );
    assert.equal(unused.node.kind, 'map');
  });
});
