import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { arrowUdf } from '../../src/index.js';
import { arrow, loadArrow } from '../../src/operators/arrow/arrow-module.js';
import { ArrowEncoder } from '../../src/operators/arrow/ipc.js';
import { ArrowDecoder } from '../../src/operators/arrow/ipc-decoder.js';
import { ArrowProjectionOperator } from '../../src/operators/arrow-batch.js';
import type {
  BatchChannel,
  BatchResponse,
  DirectBatchChannel,
  OperatorContext,
  RowMetaFields,
} from '../../src/operators/contract.js';
import type { PlannedOperator } from '../../src/plan/analyze.js';
import { inlineRunner, udfRunner } from '../../src/runtime/udf/udf-runner.js';
import { InlineUdfChannel } from '../../src/runtime/worker/udf-channel.js';

before(async () => {
  await loadArrow();
});

/** `y = 2 x` as an Arrow UDF. */
const double = (t: Table) => Float64Array.from(t.getChild('x')!.toArray() as Float64Array, (v) => 2 * v);

function planned(batch: number, fn: (t: Table) => unknown = double): PlannedOperator<'withColumn'> {
  return {
    id: 0,
    inputs: [],
    node: {
      kind: 'withColumn',
      column: 'y',
      expr: arrowUdf(fn, { input: ['x'], returns: 'float64', maxRecordsPerBatch: batch }),
    },
  } as unknown as PlannedOperator<'withColumn'>;
}

/**
 * A UDF channel whose request ring holds `room` frames, and the UDF thread behind it, stepped by
 * the test: `answer(n)` takes up to `n` requests in order, runs the real runner on each and
 * queues its answer.
 */
class SteppedChannel implements BatchChannel {
  readonly direct = false as const;
  readonly maxRequestBytes = 1 << 20;
  readonly requests: Uint8Array[] = [];
  private readonly responses: BatchResponse[] = [];
  private readonly decoder = new ArrowDecoder();
  private readonly encoder = new ArrowEncoder();
  private readonly run: ReturnType<typeof udfRunner>;
  refused = 0;
  mostWaiting = 0;

  constructor(
    op: PlannedOperator,
    private readonly room: number,
  ) {
    this.run = udfRunner(op);
  }

  send(chunks: readonly Uint8Array[], bytes: number): boolean {
    if (this.requests.length >= this.room) {
      this.refused++;
      return false;
    }
    this.requests.push(Buffer.concat(chunks, bytes));
    this.mostWaiting = Math.max(this.mostWaiting, this.requests.length);
    return true;
  }

  hasResponse(): boolean {
    return this.responses.length > 0;
  }

  receive(): BatchResponse | null {
    return this.responses.shift() ?? null;
  }

  answer(n = Number.POSITIVE_INFINITY): number {
    let done = 0;
    while (done < n && this.requests.length > 0) {
      const parts = this.decoder.decode(this.requests.shift()!).flatMap((b) => this.run(b));
      const { chunks, bytes } = this.encoder.encode(parts);
      this.responses.push({ ok: true, bytes: Buffer.concat(chunks, bytes) });
      done++;
    }
    return done;
  }
}

function operator(batch: number, room = Number.POSITIVE_INFINITY) {
  const op = planned(batch);
  const channel = new SteppedChannel(op as PlannedOperator, room);
  return { ...operatorOn(op, channel), channel };
}

function operatorOn(op: PlannedOperator<'withColumn'>, channel: BatchChannel | DirectBatchChannel) {
  const out: unknown[] = [];
  const meta: RowMetaFields = { sourceTime: 0, readTime: 0, origin: 0, sourceIndex: 0, sourcePartition: 0 };
  const ctx = {
    meta,
    udfChannel: () => channel,
    outputBlocked: () => false,
    microBatch: false,
    arrowMaxRecordsPerBatch: undefined,
    badRecord: (_op: unknown, _row: unknown, e: unknown) => {
      throw e;
    },
  } as unknown as OperatorContext;
  const next = { push: (row: unknown) => out.push(row) };
  return { udf: new ArrowProjectionOperator(op, next, ctx), out };
}

const xs = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ x: from + i }));
const ys = (from: number, to: number) => xs(from, to).map((r) => ({ ...r, y: 2 * r.x }));

describe('an Arrow operator on its UDF channel', () => {
  it('sends up to 8 full batches ahead of their answers, and takes no input while a 9th waits', () => {
    const { udf, channel, out } = operator(1);
    for (const row of xs(0, 9)) udf.push(row);
    assert.equal(channel.requests.length, 8, 'eight batches of one row are in flight');
    assert.equal(udf.full(), true, 'the ninth row waits: the task reads no input');
    assert.equal(channel.answer(3), 3);
    assert.equal(udf.ready(), true);
    udf.advance();
    assert.deepEqual(out, ys(0, 3), 'answers go on in order');
    assert.equal(channel.requests.length, 6, 'the waiting row went out as answers came');
    assert.equal(udf.full(), false);
    channel.answer();
    udf.advance();
    assert.deepEqual(out, ys(0, 9));
    assert.equal(udf.holds(), false);
  });

  it('keeps a batch the request ring has no room for, and sends it first when room comes', () => {
    const { udf, channel, out } = operator(1, 2);
    for (const row of xs(0, 5)) udf.push(row);
    assert.equal(channel.requests.length, 2);
    assert.ok(channel.refused > 0, 'a batch found the ring full');
    assert.equal(udf.full(), true, 'a full batch waits behind the unsent one');
    for (let round = 0; round < 10 && udf.holds(); round++) {
      channel.answer(1);
      udf.advance();
    }
    assert.deepEqual(out, ys(0, 5), 'every row, in order');
    assert.equal(channel.mostWaiting, 2, 'never more than the ring holds');
  });

  it('sends a part-filled batch when no more input waits only while none is in flight', () => {
    const { udf, channel, out } = operator(4);
    for (const row of xs(0, 2)) udf.push(row);
    assert.equal(channel.requests.length, 0, 'two rows do not fill a batch of four');
    udf.close();
    assert.equal(channel.requests.length, 1, 'no input waits: the two rows go');
    for (const row of xs(2, 4)) udf.push(row);
    udf.close();
    assert.equal(channel.requests.length, 1, 'a batch is in flight: the next two keep filling theirs');
    for (const row of xs(4, 6)) udf.push(row);
    assert.equal(channel.requests.length, 2, 'a full batch goes at once');
    channel.answer();
    udf.advance();
    assert.deepEqual(out, ys(0, 6));
  });
});

describe('an Arrow operator on the task thread', () => {
  function inline(batch: number, fn: (t: Table) => unknown) {
    const op = planned(batch, fn);
    return operatorOn(op, new InlineUdfChannel(inlineRunner(op as PlannedOperator)));
  }

  it('answers each batch as it is sent, and lets its rows go in order when advanced', () => {
    const { udf, out } = inline(2, double);
    for (const row of xs(0, 5)) udf.push(row);
    assert.equal(udf.ready(), true, 'two full batches are answered already');
    udf.advance();
    assert.deepEqual(out, ys(0, 4));
    assert.equal(udf.holds(), true, 'the fifth row waits for its batch to fill or the input to end');
    udf.close();
    udf.advance();
    assert.deepEqual(out, ys(0, 5));
    assert.equal(udf.holds(), false);
  });

  it("keeps each answer's values when the function writes the same output array again", () => {
    const scratch = new Float64Array(1);
    const reused = (t: Table) => {
      scratch[0] = 2 * (t.getChild('x')!.get(0) as number);
      return scratch;
    };
    const { udf, out } = inline(1, reused);
    for (const row of xs(0, 8)) udf.push(row);
    udf.advance();
    assert.deepEqual(out, ys(0, 8), 'eight answers made before any row went on, each its own');
  });

  it('joins the chunks of a result vector into one column', () => {
    const chunked = (t: Table) => {
      const A = arrow();
      const x = Array.from(t.getChild('x')!.toArray() as Float64Array, (v) => 2 * v);
      const half = Math.ceil(x.length / 2);
      const first = A.vectorFromArray(x.slice(0, half), new A.Float64());
      return first.concat(A.vectorFromArray(x.slice(half), new A.Float64()));
    };
    const { udf, out } = inline(4, chunked);
    for (const row of xs(0, 4)) udf.push(row);
    udf.advance();
    assert.deepEqual(out, ys(0, 4));
  });
});
