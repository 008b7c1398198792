import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { arrowUdf } from '../../src/index.js';
import { loadArrow } from '../../src/operators/arrow/arrow-module.js';
import { ArrowEncoder } from '../../src/operators/arrow/ipc.js';
import { ArrowDecoder } from '../../src/operators/arrow/ipc-decoder.js';
import { ArrowProjectionOperator } from '../../src/operators/arrow-batch.js';
import type {
  BatchChannel,
  BatchResponse,
  OperatorContext,
  RowMetaFields,
} from '../../src/operators/contract.js';
import type { PlannedOperator } from '../../src/plan/analyze.js';
import { udfRunner } from '../../src/runtime/udf/udf-runner.js';

before(async () => {
  await loadArrow();
});

/** `y = 2 x` as an Arrow UDF. */
const double = (t: Table) => Float64Array.from(t.getChild('x')!.toArray() as Float64Array, (v) => 2 * v);

function planned(batch: number): PlannedOperator<'withColumn'> {
  return {
    id: 0,
    inputs: [],
    node: {
      kind: 'withColumn',
      column: 'y',
      expr: arrowUdf(double, { input: ['x'], returns: 'float64', maxRecordsPerBatch: batch }),
    },
  } as unknown as PlannedOperator<'withColumn'>;
}

/**
 * A UDF channel whose request ring holds `room` frames, and the UDF thread behind it, stepped by
 * the test: `answer(n)` takes up to `n` requests in order, runs the real runner on each and
 * queues its answer.
 */
class SteppedChannel implements BatchChannel {
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
  return { udf: new ArrowProjectionOperator(op, next, ctx), channel, out };
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
