/**
 * Single-thread micro-benchmarks of the ring's building blocks (tinybench).
 *
 *   node dist/native-bench/micro/index.js [--quick]
 *
 * Each task body repeats its operation BATCH times (or fewer for slow ones) so the timer's own cost
 * (tens of ns) does not swamp operations that take a few ns; ns/op is per single operation.
 */
import { isNativeAccelerationEnabled, Packr, RESET_BUFFER_MODE, REUSE_BUFFER_MODE, Unpackr } from 'msgpackr';
import { Bench } from 'tinybench';
import type { Payment } from '../../src/demo/payments.js';
import { FrameReader, FrameWriter } from '../../src/runtime/channel/frame-codec.js';
import { DATA_PREFIX_BYTES } from '../../src/runtime/channel/frame-kind.js';
import { createRing, RingConsumer, RingProducer } from '../../src/runtime/channel/spsc-ring.js';
import { paymentPool } from '../common.js';

const BATCH = 1000;
const POOL = 1024; // a power of two
const quick = process.argv.includes('--quick');

const pool = paymentPool(POOL);
/** Keeps results observable so the JIT cannot drop the work. */
let sink = 0;

interface Entry {
  name: string;
  ops: number;
}
const entries: Entry[] = [];
const bench = new Bench({ time: quick ? 100 : 500, warmupTime: quick ? 20 : 100, throws: true });

function add(name: string, ops: number, fn: () => void): void {
  entries.push({ name, ops });
  bench.add(name, fn);
}

// --- ring, one thread: reserve + commit + poll + release of a 64-byte frame ---
{
  const sab = createRing(1 << 16);
  const p = new RingProducer(sab);
  const c = new RingConsumer(sab);
  const template = new Uint8Array(56).fill(0x5a);
  add('ring: reserve+commit+poll+release, 64-B frame (no payload write)', BATCH, () => {
    for (let i = 0; i < BATCH; i++) {
      p.reserve(56);
      p.commit(1);
      c.poll();
      sink += c.length;
      c.release();
    }
  });
  add('ring: same + 56-B payload in with u8.set', BATCH, () => {
    for (let i = 0; i < BATCH; i++) {
      const at = p.reserve(56);
      p.u8.set(template, at);
      p.commit(1);
      c.poll();
      sink += c.u8[c.payload]!;
      c.release();
    }
  });
  add('ring: same + 56-B payload in with 7 f64 stores', BATCH, () => {
    const f64 = p.f64;
    for (let i = 0; i < BATCH; i++) {
      const at = p.reserve(56) >> 3;
      for (let k = 0; k < 7; k++) f64[at + k] = i;
      p.commit(1);
      c.poll();
      sink += c.f64[c.payload >> 3]!;
      c.release();
    }
  });
}

// --- bare costs the ring pays per frame ---
{
  const i32 = new Int32Array(new SharedArrayBuffer(256));
  add('Atomics.store (seq-cst) on a SAB Int32Array', BATCH, () => {
    for (let i = 0; i < BATCH; i++) Atomics.store(i32, 0, i);
  });
  add('Atomics.load on a SAB Int32Array', BATCH, () => {
    for (let i = 0; i < BATCH; i++) sink += Atomics.load(i32, 16);
  });
  add('plain store on a SAB Int32Array', BATCH, () => {
    for (let i = 0; i < BATCH; i++) i32[(i & 7) + 32] = i;
  });
}

// --- msgpackr encode / decode of a payment ---
{
  const seq = new Packr({ sequential: true });
  const mode = REUSE_BUFFER_MODE | RESET_BUFFER_MODE;
  add('msgpackr encode, records (sequential), reuse buffer', BATCH, () => {
    for (let i = 0; i < BATCH; i++) sink += seq.pack(pool[i & (POOL - 1)], mode).length;
  });
  const seq2 = new Packr({ sequential: true });
  add('msgpackr encode, records (sequential), plain pack()', BATCH, () => {
    for (let i = 0; i < BATCH; i++) sink += seq2.pack(pool[i & (POOL - 1)]).length;
  });
  const maps = new Packr({ useRecords: false });
  add('msgpackr encode, plain maps', BATCH, () => {
    for (let i = 0; i < BATCH; i++) sink += maps.pack(pool[i & (POOL - 1)]).length;
  });

  // Decoding sequential records needs a decoder that has seen the structure: feed it the first frame.
  const enc = new Packr({ sequential: true });
  const first = Buffer.from(enc.pack(pool[0]));
  const records = pool.map((row) => Buffer.from(enc.pack(row)));
  const dec = new Unpackr({ sequential: true });
  dec.unpack(first);
  add('msgpackr decode, records (sequential)', BATCH, () => {
    for (let i = 0; i < BATCH; i++) sink += (dec.unpack(records[i & (POOL - 1)]!) as Payment).amount;
  });
  const mapBufs = pool.map((row) => Buffer.from(maps.pack(row)));
  const mapDec = new Unpackr({ useRecords: false });
  add('msgpackr decode, plain maps', BATCH, () => {
    for (let i = 0; i < BATCH; i++) sink += (mapDec.unpack(mapBufs[i & (POOL - 1)]!) as Payment).amount;
  });
}

// --- FrameWriter.writeData + FrameReader.readRow round trip, one thread ---
{
  const sab = createRing(1 << 20);
  const w = new FrameWriter(new RingProducer(sab));
  const r = new FrameReader(new RingConsumer(sab));
  // The writer stages its rows and publishes them every few frames; one row at a time, each row
  // is published before the reader polls for it.
  add('FrameWriter.writeData + publish + poll + FrameReader.readRow + release', BATCH, () => {
    for (let i = 0; i < BATCH; i++) {
      w.writeData(pool[i & (POOL - 1)], 0, i, i, 0);
      w.publish();
      r.ring.poll();
      sink += (r.readRow() as Payment).amount;
      r.ring.release();
    }
  });
}

// --- copying a ~50-byte payload out of SharedArrayBuffer memory ---
{
  const sab = createRing(1 << 16);
  const p = new RingProducer(sab);
  const c = new RingConsumer(sab);
  p.tryWrite(1, new Uint8Array(50).fill(7));
  c.poll();
  const from = c.payload;
  const to = c.payload + c.length;
  const target = Buffer.allocUnsafe(4096);
  const src = c.u8;
  add('copy 50 B out of SAB: Buffer.copy', BATCH, () => {
    for (let i = 0; i < BATCH; i++) sink += c.buf.copy(target, 0, from, to);
  });
  add('copy 50 B out of SAB: Uint8Array.set(subarray)', BATCH, () => {
    for (let i = 0; i < BATCH; i++) {
      target.set(src.subarray(from, to), 0);
      sink += target[0]!;
    }
  });
  add('copy 50 B out of SAB: byte loop', BATCH, () => {
    for (let i = 0; i < BATCH; i++) {
      for (let k = from; k < to; k++) target[k - from] = src[k]!;
      sink += target[0]!;
    }
  });
}

// --- decoding a payment straight from SAB memory vs copied out first ---
// msgpackr hands strings of 32+ bytes to its native extractor, which rejects shared memory; the
// standard payment's strings are all shorter, so a second shape with a 40-character merchant shows it.
for (const [label, row] of [
  ['payment', pool[1]!],
  ['payment with 40-char merchant', { ...pool[1]!, merchant: 'Kaufhaus am Alexanderplatz, Berlin-Mitte' }],
] as const) {
  const enc = new Packr({ sequential: true });
  const first = Buffer.from(enc.pack(row));
  const body = Buffer.from(enc.pack(row));
  const sab = createRing(1 << 16);
  const p = new RingProducer(sab);
  const c = new RingConsumer(sab);
  p.tryWrite(1, body);
  c.poll();
  const inShared = c.buf.subarray(c.payload, c.payload + c.length);
  const dec = new Unpackr({ sequential: true });
  dec.unpack(first);
  const SLOW = 50;
  add(`decode ${label} (${body.length} B) directly from SAB memory`, SLOW, () => {
    for (let i = 0; i < SLOW; i++) sink += (dec.unpack(inShared) as Payment).amount;
  });
  const scratch = Buffer.allocUnsafe(4096);
  add(`decode ${label} (${body.length} B) after Buffer.copy out of SAB`, SLOW, () => {
    for (let i = 0; i < SLOW; i++) {
      const n = c.buf.copy(scratch, 0, c.payload, c.payload + c.length);
      sink += (dec.unpack(scratch, n) as Payment).amount;
    }
  });
}

await bench.run();

function fmtNs(ns: number): string {
  return ns >= 1000 ? `${(ns / 1000).toFixed(2)} µs` : `${ns.toFixed(1)} ns`;
}

function fmtOps(perSec: number): string {
  if (perSec >= 1e6) return `${(perSec / 1e6).toFixed(2)} M`;
  if (perSec >= 1e3) return `${(perSec / 1e3).toFixed(1)} k`;
  return perSec.toFixed(0);
}

const header = ['task', 'ns/op (mean)', 'ns/op (p50)', 'ops/s', '± %', 'samples'];
const rows: string[][] = [];
for (const task of bench.tasks) {
  const entry = entries.find((e) => e.name === task.name)!;
  const result = task.result;
  if (result.state !== 'completed') {
    rows.push([task.name, result.state, '', '', '', '']);
    continue;
  }
  const meanNs = (result.latency.mean * 1e6) / entry.ops;
  const p50Ns = (result.latency.p50 * 1e6) / entry.ops;
  rows.push([
    task.name,
    fmtNs(meanNs),
    fmtNs(p50Ns),
    fmtOps(1e9 / meanNs),
    result.latency.rme.toFixed(1),
    String(result.latency.samplesCount),
  ]);
}
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: readonly string[]) =>
  r
    .map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!)))
    .join('  ')
    .trimEnd();
process.stdout.write(
  `Millrace micro-benchmarks (tinybench, ${process.version}, msgpackr native string extractor: ` +
    `${isNativeAccelerationEnabled ? 'on' : 'off'}, DATA prefix ${DATA_PREFIX_BYTES} B)\n\n`,
);
process.stdout.write(
  `${[line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')}\n`,
);
if (sink === 42.4242) process.stdout.write('\n'); // keeps `sink` live
