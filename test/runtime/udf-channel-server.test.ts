import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { arrowUdf } from '../../src/index.js';
import { loadArrow } from '../../src/operators/arrow/arrow-module.js';
import { RowColumns } from '../../src/operators/arrow/columns.js';
import { ArrowEncoder } from '../../src/operators/arrow/ipc.js';
import { ArrowDecoder } from '../../src/operators/arrow/ipc-decoder.js';
import type { PlannedOperator } from '../../src/plan/analyze.js';
import { createRing, RingConsumer, RingProducer } from '../../src/runtime/channel/spsc-ring.js';
import { answeredSpinMicros } from '../../src/runtime/driver/host-specs.js';
import { ChannelServer } from '../../src/runtime/udf/channel-server.js';
import { udfRunner } from '../../src/runtime/udf/udf-runner.js';
import { UdfChannel } from '../../src/runtime/worker/udf-channel.js';

before(async () => {
  await loadArrow();
});

const triple = (t: Table) => Float64Array.from(t.getChild('x')!.toArray() as Float64Array, (v) => 3 * v);

const op = {
  id: 0,
  inputs: [],
  node: { kind: 'withColumn', column: 'y', expr: arrowUdf(triple, { input: ['x'], returns: 'float64' }) },
} as unknown as PlannedOperator;

/** A task's end and a UDF thread's end of one channel, whose answers' ring is `responseBytes` large. */
function channel(responseBytes: number) {
  const request = createRing(64 << 10);
  const response = createRing(responseBytes);
  const task = new UdfChannel(new RingProducer(request), new RingConsumer(response));
  const server = new ChannelServer(new RingConsumer(request), new RingProducer(response), udfRunner(op));
  return { task, server };
}

describe('the UDF thread end of a channel', () => {
  it('keeps an answer the ring has no room for, takes no request meanwhile, and writes it once there is room', () => {
    const { task, server } = channel(1024);
    const encoder = new ArrowEncoder();
    const columns = new RowColumns('test', ['x'], {});
    for (let x = 0; x < 8; x++) {
      const { chunks, bytes } = encoder.encode([columns.toBatch([{ x }], 1, []).batch]);
      assert.ok(task.send(chunks, bytes), `request ${x} is sent ahead`);
    }
    let answered = 0;
    while (server.answer()) answered++;
    assert.ok(answered < 8, `the answers' ring holds some of the answers only (${answered})`);
    assert.equal(server.hasRequest(), true, 'requests wait behind the answer that did not fit');
    assert.equal(server.canAnswer(), false, 'no room yet');
    const decoder = new ArrowDecoder();
    const ys: number[] = [];
    for (let round = 0; round < 32 && ys.length < 8; round++) {
      for (let r = task.receive(); r !== null; r = task.receive()) {
        assert.ok(r.ok && 'bytes' in r, 'a UDF thread answers in IPC messages');
        decoder.forEachColumns(r.bytes, (_n, [y]) => ys.push(...Array.from(y as Float64Array)));
      }
      while (server.answer()) answered++;
    }
    assert.deepEqual(ys, [0, 3, 6, 9, 12, 15, 18, 21], 'every answer once, in the order of the requests');
    assert.equal(server.hasRequest(), false);
  });
});

describe('a UDF thread after an answer', () => {
  it('spins for the next request only where the machine has a core for it', () => {
    assert.equal(answeredSpinMicros(1, 1, 2), 0, 'two cores: the host and the driver need them');
    assert.equal(answeredSpinMicros(1, 1, 3), 1000);
    assert.equal(answeredSpinMicros(4, 2, 6), 0);
    assert.equal(answeredSpinMicros(4, 2, 16), 1000);
  });
});
