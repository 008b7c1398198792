import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { DoorbellTable } from '../../../src/runtime/channel/doorbell.js';
import { FrameReader, FrameWriter } from '../../../src/runtime/channel/frame-codec.js';
import { FrameKind } from '../../../src/runtime/channel/frame-kind.js';
import { tagArg, tagKind } from '../../../src/runtime/channel/ring-layout.js';
import { createRing, RingConsumer, RingProducer, ringFill } from '../../../src/runtime/channel/spsc-ring.js';

function payloadOf(n: number, size: number): Uint8Array {
  const p = new Uint8Array(size);
  for (let i = 0; i < size; i++) p[i] = (n + i) & 0xff;
  return p;
}

function readPayload(c: RingConsumer): Uint8Array {
  return c.u8.slice(c.payload, c.payload + c.length);
}

describe('SPSC ring', () => {
  it('delivers frames in order across many wrap-arounds of the data area', () => {
    const sab = createRing(1024);
    const p = new RingProducer(sab);
    const c = new RingConsumer(sab);
    let next = 0;
    for (let i = 0; i < 5000; i++) {
      const size = 1 + ((i * 37) % 200);
      assert.ok(p.tryWrite((i % 200) + 1, payloadOf(i, size)), `frame ${i} fits an empty-enough ring`);
      if (i % 3 === 2) {
        while (c.poll()) {
          const size2 = 1 + ((next * 37) % 200);
          assert.equal(c.tag, (next % 200) + 1);
          assert.deepEqual(readPayload(c), payloadOf(next, size2));
          c.release();
          next++;
        }
      }
    }
    while (c.poll()) {
      assert.deepEqual(readPayload(c), payloadOf(next, 1 + ((next * 37) % 200)));
      c.release();
      next++;
    }
    assert.equal(next, 5000);
  });

  it('refuses a frame when full, loses nothing, and accepts it again once the consumer frees space', () => {
    const sab = createRing(1024);
    const p = new RingProducer(sab);
    const c = new RingConsumer(sab);
    let written = 0;
    while (p.tryWrite(1, payloadOf(written, 56))) written++;
    assert.equal(written, 1024 / 64, 'a 1 KiB ring holds sixteen 64-byte frames');
    assert.equal(p.tryWrite(1, payloadOf(written, 56)), false, 'a full ring refuses the next frame');
    assert.ok(c.poll());
    c.release();
    assert.ok(p.tryWrite(1, payloadOf(written, 56)), 'one freed slot takes one more frame');
    written++;
    let read = 0;
    while (c.poll()) {
      assert.deepEqual(readPayload(c), payloadOf(read + 1, 56));
      c.release();
      read++;
    }
    assert.equal(read + 1, written);
  });

  it('tells any thread how full it is, from its published head and tail', () => {
    const sab = createRing(1024);
    const p = new RingProducer(sab);
    const c = new RingConsumer(sab);
    assert.equal(ringFill(sab), 0, 'empty');
    for (let i = 0; i < 4; i++) p.tryWrite(1, payloadOf(i, 56));
    p.publish();
    assert.equal(ringFill(sab), (4 * 64) / 1024, 'four 64-byte frames of 1 KiB');
    while (p.tryWrite(1, payloadOf(0, 56)));
    p.publish();
    assert.equal(ringFill(sab), 1, 'full');
    while (c.poll()) c.release();
    assert.equal(ringFill(sab), 0, 'drained');
  });

  it('rejects a frame larger than half the ring with RECORD_TOO_LARGE', () => {
    const p = new RingProducer(createRing(1024));
    assert.throws(() => p.reserve(600), { code: 'RECORD_TOO_LARGE' });
  });

  it('delivers exactly the sent frames in order under any producer/consumer interleaving', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 300 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 2000 }),
        (sizes, schedule) => {
          const sab = createRing(1024);
          const p = new RingProducer(sab);
          const c = new RingConsumer(sab);
          let sent = 0;
          let received = 0;
          for (let step = 0; received < sizes.length; step++) {
            assert.ok(step < 100_000, 'bounded schedule');
            const produce = sent < sizes.length && (schedule[step % schedule.length] ?? true);
            if (produce && p.tryWrite((sent % 250) + 1, payloadOf(sent, sizes[sent]!))) {
              sent++;
            } else if (c.poll()) {
              assert.equal(c.tag, (received % 250) + 1);
              assert.deepEqual(readPayload(c), payloadOf(received, sizes[received]!));
              c.release();
              received++;
            } else {
              assert.ok(sent < sizes.length, 'ring empty before every frame arrived');
              assert.ok(
                p.tryWrite((sent % 250) + 1, payloadOf(sent, sizes[sent]!)),
                'an empty ring takes a frame',
              );
              sent++;
            }
          }
          assert.equal(c.poll(), false, 'nothing beyond what was sent');
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('SPSC ring between two threads', () => {
  it('moves 200 000 frames from a worker thread under backpressure, in order, none lost', async () => {
    const bells = DoorbellTable.create(2);
    const sab = createRing(4096, 0, 1);
    const total = 200_000;
    const worker = new Worker(
      `
      const { workerData } = require('node:worker_threads');
      const { sab, bells, total } = workerData;
      const i32 = new Int32Array(sab);
      const u8 = new Uint8Array(sab);
      import(workerData.ringUrl).then(async ({ RingProducer }) => {
        const { DoorbellTable } = await import(workerData.bellUrl);
        const table = new DoorbellTable(bells);
        const p = new RingProducer(sab, table);
        const payload = new Uint8Array(24);
        for (let i = 0; i < total; ) {
          new DataView(payload.buffer).setUint32(0, i);
          payload[4] = i % 7;
          const at = p.reserve(5 + (i % 19));
          if (at < 0) {
            const seq = table.prepareToPark(1);
            if (p.reserve(5 + (i % 19)) >= 0) { table.unpark(1); continue; }
            table.parkSync(1, seq, 1000);
            table.unpark(1);
            continue;
          }
          u8.set(payload.subarray(0, 5), at);
          p.commit((i % 200) + 1);
          i++;
        }
      });
      `,
      {
        eval: true,
        workerData: {
          sab,
          bells: bells.sab,
          total,
          ringUrl: new URL('../../../src/runtime/channel/spsc-ring.js', import.meta.url).href,
          bellUrl: new URL('../../../src/runtime/channel/doorbell.js', import.meta.url).href,
        },
      },
    );
    try {
      const c = new RingConsumer(sab, bells);
      let next = 0;
      const deadline = Date.now() + 60_000;
      while (next < total) {
        assert.ok(Date.now() < deadline, 'transfer finished within a minute');
        if (!c.poll()) {
          const seq = bells.prepareToPark(0);
          if (c.hasFrame()) {
            bells.unpark(0);
            continue;
          }
          await bells.parkAsync(0, seq, 1000);
          bells.unpark(0);
          continue;
        }
        const view = new DataView(c.sab, c.payload, 5);
        assert.equal(view.getUint32(0), next);
        assert.equal(c.tag, (next % 200) + 1);
        assert.equal(c.length, 5 + (next % 19));
        c.release();
        next++;
      }
      assert.equal(c.poll(), false);
    } finally {
      await worker.terminate();
    }
  });
});

describe('frame codec', () => {
  it('round-trips rows with their timing fields and markers, queueing what does not fit', () => {
    const sab = createRing(1024);
    const w = new FrameWriter(new RingProducer(sab));
    const r = new FrameReader(new RingConsumer(sab));
    const rows = Array.from({ length: 50 }, (_, i) => ({ txId: `tx-${i}`, amount: i * 1.5, tags: ['a', i] }));
    for (const [i, row] of rows.entries()) w.writeData(row, i % 4, 1000 + i, 2000 + i, i);
    w.writeMarker(FrameKind.BARRIER, 7);
    assert.ok(w.blocked, 'fifty rows do not fit a 1 KiB ring: the rest wait in the writer');
    const seen: unknown[] = [];
    let barrier = -1;
    for (let guard = 0; guard < 1000 && barrier < 0; guard++) {
      w.flush();
      while (r.ring.poll()) {
        if (tagKind(r.ring.tag) === FrameKind.DATA) {
          const i = seen.length;
          assert.equal(tagArg(r.ring.tag), i % 4);
          assert.equal(r.sourceTime(), 1000 + i);
          assert.equal(r.readTime(), 2000 + i);
          assert.equal(r.origin(), i);
          seen.push(r.readRow());
        } else {
          assert.equal(tagKind(r.ring.tag), FrameKind.BARRIER);
          barrier = r.markerValue();
        }
        r.ring.release();
      }
    }
    assert.deepEqual(seen, rows);
    assert.equal(barrier, 7);
    assert.equal(w.blocked, false);
  });
});
