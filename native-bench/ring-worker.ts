/**
 * Worker thread of the ring harness. The harness starts two of these (one per side of a ring) and
 * sends each a job; the worker runs it to completion (spinning, no parking, except in the parked
 * job) and answers with one message. Jobs come in pairs that share SharedArrayBuffers:
 *
 *   tput-producer  → tput-consumer    raw 64-byte frames (R1)
 *   pp-ping        ⇄ pp-echo          ping-pong over two rings (R2)
 *   codec-producer → codec-consumer   msgpackr payments via FrameWriter / FrameReader (R3)
 *   parked-writer  → parked-reader    one-way hand-off to a reader parked on its doorbell (P1)
 *
 * Consumers time the frames after the warm-up ones; the harness never spins itself.
 */
import { parentPort } from 'node:worker_threads';
import type { Payment } from '../src/demo/payments.js';
import { DoorbellTable } from '../src/runtime/channel/doorbell.js';
import { FrameReader, FrameWriter } from '../src/runtime/channel/frame-codec.js';
import { FrameKind } from '../src/runtime/channel/frame-kind.js';
import { tagKind } from '../src/runtime/channel/ring-layout.js';
import { RingConsumer, RingProducer } from '../src/runtime/channel/spsc-ring.js';
import { latencyStats, paymentPool } from './common.js';

export type Job =
  | { kind: 'tput-producer'; ring: SharedArrayBuffer; total: number; payloadBytes: number; fill: PayloadFill }
  | { kind: 'tput-consumer'; ring: SharedArrayBuffer; total: number; warmup: number }
  | { kind: 'pp-ping'; out: SharedArrayBuffer; in: SharedArrayBuffer; total: number; warmup: number }
  | { kind: 'pp-echo'; in: SharedArrayBuffer; out: SharedArrayBuffer; total: number }
  | { kind: 'codec-producer'; ring: SharedArrayBuffer; total: number }
  | { kind: 'codec-consumer'; ring: SharedArrayBuffer; total: number; warmup: number }
  | {
      kind: 'parked-writer';
      ring: SharedArrayBuffer;
      bells: SharedArrayBuffer;
      total: number;
      gapMicros: number;
    }
  | {
      kind: 'parked-reader';
      ring: SharedArrayBuffer;
      bells: SharedArrayBuffer;
      total: number;
      warmup: number;
    };

/**
 * How the R1 producer writes its payload: `set` copies a template with Uint8Array.set (what
 * RingProducer.tryWrite does), `f64` stores it as Float64 words, `none` writes only the sequence number.
 */
export type PayloadFill = 'i32' | 'set' | 'f64' | 'none';

/** What a job answers: throughput jobs fill `perSec`, latency jobs the ns figures. */
export interface JobResult {
  kind: Job['kind'];
  perSec?: number;
  seconds?: number;
  errors?: number;
  /** Consumers: polls that found the ring empty (the producer was the slower side). */
  emptyPolls?: number;
  /** codec-producer: rows that found the ring full and waited in the FrameWriter (the consumer was slower). */
  fullEvents?: number;
  p50Ns?: number;
  p90Ns?: number;
  p99Ns?: number;
  p999Ns?: number;
  meanNs?: number;
}

/** Producer of R1: the payload written as `fill` says, then a sequence number in its first 4 bytes. */
function tputProducer(
  sab: SharedArrayBuffer,
  total: number,
  payloadBytes: number,
  fill: PayloadFill,
): JobResult {
  const p = new RingProducer(sab);
  const u8 = p.u8;
  const i32 = p.i32;
  const f64 = p.f64;
  const template = new Uint8Array(payloadBytes).fill(0x5a);
  const words = payloadBytes >> 3;
  const mode = fill === 'set' ? 0 : fill === 'f64' ? 1 : fill === 'i32' ? 3 : 2;
  const template32 = new Int32Array(template.buffer);
  for (let i = 0; i < total; ) {
    const at = p.reserve(payloadBytes);
    if (at < 0) continue;
    if (mode === 0) u8.set(template, at);
    else if (mode === 1) for (let k = at >> 3, end = k + words; k < end; k++) f64[k] = i;
    else if (mode === 3)
      for (let k = 0, d = at >> 2; k < template32.length; k++, d++) i32[d] = template32[k]!;
    i32[at >> 2] = i;
    // Staged like the engine's rows: the tail is published every few frames (and when full).
    p.stage(1);
    i++;
  }
  p.publish();
  return { kind: 'tput-producer' };
}

function tputConsumer(sab: SharedArrayBuffer, total: number, warmup: number): JobResult {
  const c = new RingConsumer(sab);
  const i32 = c.i32;
  let errors = 0;
  let emptyPolls = 0;
  let t0 = performance.now();
  for (let i = 0; i < total; ) {
    if (!c.poll()) {
      emptyPolls++;
      continue;
    }
    if (i32[c.payload >> 2] !== (i | 0)) errors++;
    c.releaseDeferred();
    if (++i === warmup) t0 = performance.now();
  }
  const seconds = (performance.now() - t0) / 1000;
  return { kind: 'tput-consumer', perSec: (total - warmup) / seconds, seconds, errors, emptyPolls };
}

/** One clock read per iteration: sample i = t(i + 1) - t(i), one full round trip. */
function ping(outSab: SharedArrayBuffer, inSab: SharedArrayBuffer, total: number, warmup: number): JobResult {
  const out = new RingProducer(outSab);
  const inn = new RingConsumer(inSab);
  const samples = new Float64Array(total - warmup);
  let errors = 0;
  let prev = performance.now();
  for (let i = 0; i < total; i++) {
    let at = out.reserve(8);
    while (at < 0) at = out.reserve(8);
    out.i32[at >> 2] = i;
    out.commit(1);
    while (!inn.poll()) {}
    if (inn.i32[inn.payload >> 2] !== i) errors++;
    inn.release();
    const now = performance.now();
    if (i >= warmup) samples[i - warmup] = (now - prev) * 1e6;
    prev = now;
  }
  return { kind: 'pp-ping', errors, ...latencyStats(samples) };
}

function echo(inSab: SharedArrayBuffer, outSab: SharedArrayBuffer, total: number): JobResult {
  const inn = new RingConsumer(inSab);
  const out = new RingProducer(outSab);
  for (let i = 0; i < total; i++) {
    while (!inn.poll()) {}
    const seq = inn.i32[inn.payload >> 2]!;
    inn.release();
    let at = out.reserve(8);
    while (at < 0) at = out.reserve(8);
    out.i32[at >> 2] = seq;
    out.commit(1);
  }
  return { kind: 'pp-echo' };
}

/** R3 producer: cycles a pool of distinct payments; a row the ring cannot take waits in the writer. */
function codecProducer(sab: SharedArrayBuffer, total: number): JobResult {
  const pool = paymentPool(4096);
  const w = new FrameWriter(new RingProducer(sab));
  for (let i = 0; i < total; i++) {
    if (!w.writeData(pool[i & 4095], 0, i, i, 0)) {
      while (!w.flush()) {}
    }
  }
  w.publish();
  return { kind: 'codec-producer', fullEvents: w.fullEvents };
}

function codecConsumer(sab: SharedArrayBuffer, total: number, warmup: number): JobResult {
  const r = new FrameReader(new RingConsumer(sab));
  const ring = r.ring;
  let errors = 0;
  let emptyPolls = 0;
  let t0 = performance.now();
  for (let i = 0; i < total; ) {
    if (!ring.poll()) {
      emptyPolls++;
      continue;
    }
    if (tagKind(ring.tag) !== FrameKind.DATA) errors++;
    const row = r.readRow() as Payment;
    if (row.ts !== 1_760_000_000_000 + (i & 4095)) errors++;
    ring.releaseDeferred();
    if (++i === warmup) t0 = performance.now();
  }
  const seconds = (performance.now() - t0) / 1000;
  return { kind: 'codec-consumer', perSec: (total - warmup) / seconds, seconds, errors, emptyPolls };
}

/** Sleeps (parks this thread) for `micros`. */
function sleepMicros(cell: Int32Array, micros: number): void {
  Atomics.wait(cell, 0, 0, micros / 1000);
}

/** process.hrtime is one monotonic clock for all threads of the process; ns since boot fit a double. */
function clockNs(): number {
  return Number(process.hrtime.bigint());
}

function parkedWriter(
  sab: SharedArrayBuffer,
  bellsSab: SharedArrayBuffer,
  total: number,
  gap: number,
): JobResult {
  const p = new RingProducer(sab, new DoorbellTable(bellsSab));
  const cell = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < total; i++) {
    sleepMicros(cell, gap);
    let at = p.reserve(8);
    while (at < 0) at = p.reserve(8);
    p.f64[at >> 3] = clockNs();
    p.commit(1); // rings the reader's bell when it is parked
  }
  return { kind: 'parked-writer' };
}

function parkedReader(
  sab: SharedArrayBuffer,
  bellsSab: SharedArrayBuffer,
  total: number,
  warmup: number,
): JobResult {
  const bells = new DoorbellTable(bellsSab);
  const c = new RingConsumer(sab, bells);
  const samples = new Float64Array(total - warmup);
  const bell = c.consumerBell;
  for (let i = 0; i < total; ) {
    if (c.poll()) {
      const latency = clockNs() - c.f64[c.payload >> 3]!;
      c.release();
      if (i >= warmup) samples[i - warmup] = latency;
      i++;
      continue;
    }
    const seq = bells.prepareToPark(bell);
    if (!c.hasFrame()) bells.parkSync(bell, seq, 1000);
    bells.unpark(bell);
  }
  return { kind: 'parked-reader', ...latencyStats(samples) };
}

function run(job: Job): JobResult {
  switch (job.kind) {
    case 'tput-producer':
      return tputProducer(job.ring, job.total, job.payloadBytes, job.fill);
    case 'tput-consumer':
      return tputConsumer(job.ring, job.total, job.warmup);
    case 'pp-ping':
      return ping(job.out, job.in, job.total, job.warmup);
    case 'pp-echo':
      return echo(job.in, job.out, job.total);
    case 'codec-producer':
      return codecProducer(job.ring, job.total);
    case 'codec-consumer':
      return codecConsumer(job.ring, job.total, job.warmup);
    case 'parked-writer':
      return parkedWriter(job.ring, job.bells, job.total, job.gapMicros);
    case 'parked-reader':
      return parkedReader(job.ring, job.bells, job.total, job.warmup);
  }
}

parentPort?.on('message', (job: Job) => {
  parentPort!.postMessage(run(job));
});
