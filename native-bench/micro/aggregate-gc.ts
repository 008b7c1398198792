/**
 * Garbage and young-generation GC of E2's row path (`millrace bench windowed-count`), in one
 * thread, without the clock: the same payments, encoded into a ring and decoded as the shuffle does
 * it, the engine's own aggregate operator for each of the 2 shuffle partitions (count per card and
 * 1-s window, update mode, watermark 2 s behind), and every result row handed to a sink that reads
 * it. The thread does the row work of both of E2's workers.
 * Rows go in as fast as the thread runs; event time advances by the row count (100 000 rows a
 * second over both partitions), so state has E2's shape: ≈ 3 live windows of up to 100 000 cards.
 *
 *   node dist/native-bench/micro/aggregate-gc.js [--seconds N] [--runs N]
 *
 * Prints per run: ns per row, scavenges per 100 000 rows (the young generation fills at that rate:
 * bytes allocated per row), median and total scavenge pause, and the groups held at the end.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { keyedPayment } from '../../src/demo/payments.js';
import { keyHasher } from '../../src/plan/partitioner.js';
import { FrameReader, FrameWriter } from '../../src/runtime/channel/frame-codec.js';
import { createRing, RingConsumer, RingProducer } from '../../src/runtime/channel/spsc-ring.js';
import { countPerCardAndSecond } from './aggregate-alone.js';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : Number(process.argv[i + 1]);
}

/** Keeps the sink's reads observable. */
let sink = 0;

async function run(seconds: number): Promise<void> {
  let watermark = Number.NEGATIVE_INFINITY;
  const out = {
    push: (row: unknown) => {
      const r = row as { n: number; window: { end: number } };
      sink += r.n + r.window.end;
    },
  };
  // Both partitions of the shuffle, so the thread does the work of both workers: every generated
  // row is encoded, decoded and aggregated once.
  const aggs = countPerCardAndSecond({
    delay: '2 seconds',
    mode: 'update',
    out,
    watermark: () => watermark,
    partitions: 2,
  });
  const sab = createRing(1 << 16);
  const writer = new FrameWriter(new RingProducer(sab));
  const consumer = new RingConsumer(sab);
  const reader = new FrameReader(consumer);
  const hash = keyHasher('cardId');
  const generate = keyedPayment(100_000, 2);

  const pauses: number[] = [];
  const obs = new PerformanceObserver((l) => {
    for (const e of l.getEntries()) {
      const d = (e as unknown as { detail?: { kind: number } }).detail;
      if (d?.kind === constants.NODE_PERFORMANCE_GC_MINOR) pauses.push(e.duration);
    }
  });
  obs.observe({ entryTypes: ['gc'] });

  /** Durations (ms) of the watermark calls that evicted windows (the others take µs). */
  const evictions: number[] = [];
  const t0 = 1_764_000_000_000;
  const total = seconds * 100_000;
  let rows = 0;
  const start = process.hrtime.bigint();
  for (let n = 0; n < total; n++) {
    // Turns of the event loop, as a worker's host loop takes them: GC entries are delivered there.
    if (n % 10_000 === 0) await new Promise((r) => setImmediate(r));
    const partition = n & 1;
    const ts = t0 + n / 100;
    const payment = generate(partition, n >> 1, ts);
    const agg = aggs[hash(payment) % 2]!;
    writer.writeData(payment, 0, ts, ts, n);
    writer.publish();
    consumer.poll();
    const row = reader.readRow();
    consumer.release();
    agg.push(row);
    rows++;
    // The watermark follows every 100 rows, as markers do between frames.
    if (n % 100 === 0) {
      const w = ts - 2000;
      if (w > watermark) {
        watermark = w;
        const before = process.hrtime.bigint();
        aggs[0]!.onWatermark(w);
        aggs[1]!.onWatermark(w);
        const took = Number(process.hrtime.bigint() - before) / 1e6;
        if (took > 0.5) evictions.push(took);
      }
    }
  }
  const ns = Number(process.hrtime.bigint() - start);
  // Let the observer see the last entries.
  await new Promise((r) => setImmediate(r));
  {
    obs.disconnect();
    const sorted = [...pauses].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const sum = pauses.reduce((a, b) => a + b, 0);
    const semi = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size;
    console.log(
      `${(ns / rows).toFixed(0)} ns/row, ${rows} rows, ${((pauses.length * 100_000) / rows).toFixed(1)} scavenges/100k rows ` +
        `(new space ${(semi / 2 ** 20).toFixed(1)} MiB), scavenge median ${median.toFixed(2)} ms, ` +
        `total ${sum.toFixed(0)} ms (${((sum * 1e6) / rows).toFixed(0)} ns/row), groups ${aggs[0]!.table!.size + aggs[1]!.table!.size}, ` +
        `evictions: ${evictions.length}, median ${(evictions.sort((a, b) => a - b)[evictions.length >> 1] ?? 0).toFixed(2)} ms`,
    );
  }
}

const seconds = arg('seconds', 20);
for (let i = arg('runs', 3); i > 0; i--) await run(seconds);
if (sink === 42) console.log('');
