import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemorySourceFeed } from '../../src/connectors/memory/source-feed.js';
import type { MemorySourceSpec } from '../../src/connectors/spec.js';
import { FrameReader, FrameWriter } from '../../src/runtime/channel/frame-codec.js';
import { FrameKind } from '../../src/runtime/channel/frame-kind.js';
import { tagKind } from '../../src/runtime/channel/ring-layout.js';
import { createRing, RingConsumer, RingProducer } from '../../src/runtime/channel/spsc-ring.js';
import { RingFeedPort } from '../../src/runtime/driver/feed-port.js';
import { PreciseTime } from '../../src/runtime/time/precise-time.js';

const spec = {
  kind: 'memory',
  name: 'in',
  partitions: 1,
  description: 'MemoryStream[in]',
} as MemorySourceSpec;

/** A memory source feeding one small ring whose reader the test drives. */
function setup(ringBytes = 4096) {
  const sab = createRing(ringBytes);
  const writer = new FrameWriter(new RingProducer(sab));
  const reader = new FrameReader(new RingConsumer(sab));
  const precise = new PreciseTime(0);
  const ports = [new RingFeedPort(writer, 0)];
  const feed = new MemorySourceFeed(spec, { ports, now: () => precise.now(), microBatch: false });
  const cursor = feed.cursors[0]!;
  /**
   * Reads every frame in the ring: rows as their values, markers as `kind:value`; what the cursor
   * says of its backlog goes to `backlog` instead, unless `withBacklog` (as `behind`/`caught up`).
   */
  const backlog: string[] = [];
  const drain = (withBacklog = false): unknown[] => {
    const out: unknown[] = [];
    const ring = reader.ring;
    while (ring.poll()) {
      const kind = tagKind(ring.tag);
      if (kind === FrameKind.SOURCE_BACKLOG) {
        const said = reader.markerValue() === 1 ? 'behind' : 'caught up';
        backlog.push(said);
        if (withBacklog) out.push(said);
      } else {
        out.push(kind === FrameKind.DATA ? reader.readRow() : `${kind}:${reader.markerValue()}`);
      }
      ring.release();
    }
    return out;
  };
  return { feed, cursor, writer, drain, backlog };
}

describe('a memory source feeding a full ring', () => {
  it('keeps at most one frame waiting outside the ring however many rows are added', () => {
    const { feed, cursor, writer, drain } = setup();
    feed.feedAll();
    feed.addData(Array.from({ length: 10_000 }, (_, i) => ({ i })));
    assert.ok(writer.pendingFrames <= 1, `${writer.pendingFrames} frames wait`);
    const got: unknown[] = [];
    for (let round = 0; round < 10_000 && got.length < 10_000; round++) {
      got.push(...drain());
      writer.flush();
      cursor.pump();
      assert.ok(writer.pendingFrames <= 1);
    }
    assert.deepEqual(
      got,
      Array.from({ length: 10_000 }, (_, i) => ({ i })),
    );
  });

  it('puts an epoch barrier after the rows sent so far, and a flush probe after every row added', () => {
    const { feed, cursor, writer, drain } = setup();
    feed.feedAll();
    feed.addData(Array.from({ length: 500 }, (_, i) => ({ i })));
    const sent = cursor.sent;
    assert.ok(sent < 500, 'the ring is full before the last rows');
    cursor.markAt(cursor.sent, { kind: FrameKind.BARRIER, value: 7 });
    cursor.markAt(feed.latestOffsets()[0]!, { kind: FrameKind.FLUSH, value: 1 });
    const got: unknown[] = [];
    for (let round = 0; round < 1000 && !got.includes(`${FrameKind.FLUSH}:1`); round++) {
      got.push(...drain());
      writer.flush();
      cursor.pump();
    }
    const barrier = got.indexOf(`${FrameKind.BARRIER}:7`);
    assert.equal(barrier, sent, 'the barrier follows exactly the rows sent before it');
    assert.equal(got.indexOf(`${FrameKind.FLUSH}:1`), 501, 'the flush probe follows all 500 rows');
  });

  it('ends a batch at its end offset only once the rows before it are in the ring', () => {
    const { feed, cursor, writer, drain } = setup();
    feed.addData(Array.from({ length: 300 }, (_, i) => ({ i })));
    feed.endAt(0, 0, 300);
    const got: unknown[] = [];
    for (let round = 0; round < 1000 && !got.includes(`${FrameKind.BATCH}:0`); round++) {
      got.push(...drain());
      writer.flush();
      cursor.pump();
    }
    assert.equal(got.length, 301);
    assert.equal(got[300], `${FrameKind.BATCH}:0`);
  });

  it('refuses a row larger than the ring in addData, even while rows wait', () => {
    const { feed, writer } = setup();
    feed.feedAll();
    feed.addData(Array.from({ length: 500 }, (_, i) => ({ i })));
    assert.ok(writer.blocked);
    assert.throws(() => feed.addData([{ big: 'x'.repeat(5000) }]), {
      code: 'RECORD_TOO_LARGE',
      message: /row 500 of source 'in' \(partition 0\) was not added/,
    });
    assert.equal(feed.latestOffsets()[0], 500, 'the refused row is not in the log');
  });

  it('tells the task it caught up once every row is in the ring, and that it is behind before rows it has not sent', () => {
    const { feed, cursor, writer, drain } = setup();
    feed.feedAll();
    assert.deepEqual(drain(true), ['caught up'], 'an empty partition holds nothing back');
    feed.addData([{ i: 0 }, { i: 1 }]);
    assert.deepEqual(
      drain(true),
      ['behind', { i: 0 }, { i: 1 }, 'caught up'],
      'once per addData, not per row',
    );
    feed.addData(Array.from({ length: 500 }, (_, i) => ({ i })));
    const got: unknown[] = drain(true);
    assert.equal(got[0], 'behind');
    assert.ok(!got.includes('caught up'), 'rows still wait outside the ring');
    for (let round = 0; round < 1000 && !got.includes('caught up'); round++) {
      writer.flush();
      if (cursor.waiting) cursor.pump();
      got.push(...drain(true));
    }
    assert.equal(got.at(-1), 'caught up');
    assert.equal(got.filter((f) => typeof f === 'object').length, 500);
  });
});
