/**
 * Ring benchmark: the TypeScript SharedArrayBuffer ring against the native C++ ring (ring.cpp),
 * side by side in one run, on the targets R1–R3 (docs/benchmarks.md, "Targets").
 *
 *   node dist/native-bench/harness.js [--quick] [--runs N] [--json] [--r1-payload i32|set|f64|none]
 *
 * R1  64-byte frames (56-byte payload + 8-byte header), producer → consumer, both spinning: frames/s,
 *     TS / native ≥ 0.8. Both sides stage frames and publish their index every 16 frames, as the
 *     engine does. The TS producer copies each payload in with Int32 stores, as FrameWriter copies
 *     small rows (`--r1-payload set|f64|none` for attribution: Uint8Array.set, Float64 stores, or
 *     only the 4-byte sequence number). Also measured: the native ring publishing with seq-cst
 *     stores, which is what Atomics.store is, to separate the memory-ordering cost from the rest.
 * R2  ping-pong round trip over two rings, both spinning: p50, TS / native ≤ 2.5.
 * R3  msgpackr-encoded card payments through FrameWriter → FrameReader: ≥ 2 M records/s.
 * P1  (information, no target) one-way hand-off when the reader is parked on its doorbell.
 *
 * Every TS side runs in its own worker thread; the main thread only waits for their answers, so
 * at most two threads spin. Each run excludes its warm-up frames; runs alternate native / TS and the
 * median over runs is quoted with min–max. A missed target is reported, not an error: the exit
 * status is non-zero only when something failed (build, crash, frames lost or out of order).
 */
import { execFile, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import { DoorbellTable } from '../src/runtime/channel/doorbell.js';
import { DATA_PREFIX_BYTES } from '../src/runtime/channel/frame-kind.js';
import { DEFAULT_RING_CAPACITY, frameBytes } from '../src/runtime/channel/ring-layout.js';
import { createRing } from '../src/runtime/channel/spsc-ring.js';
import { paymentPool, type Summary, summarize } from './common.js';
import type { Job, JobResult, PayloadFill } from './ring-worker.js';

const execFileAsync = promisify(execFile);

/** The repository root: this file runs from dist/native-bench/. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE = join(ROOT, 'native-bench', 'ring.cpp');
const BINARY = join(ROOT, 'native-bench', 'build', 'ring');

const PAYLOAD_BYTES = 56;
const CAPACITY = DEFAULT_RING_CAPACITY;
const PARK_GAP_MICROS = 200;
/** Longest a single measurement (one side of one run) may take before the harness gives up. */
const JOB_TIMEOUT_MS = 120_000;

/** A bad command line: reported without a stack trace, exit status 2. */
class UsageError extends Error {}

interface Options {
  quick: boolean;
  runs: number;
  json: boolean;
  r1Payload: PayloadFill;
}

interface Counts {
  r1Frames: number;
  r2Iterations: number;
  r3Records: number;
  p1Iterations: number;
}

interface Row {
  id: string;
  title: string;
  unit: 'frames/s' | 'ns' | 'records/s';
  ts: Summary;
  native: Summary | null;
  /** TS median / native median. */
  ratio: number | null;
  target: string;
  /** null: information only, no target. */
  pass: boolean | null;
  detail: Record<string, unknown>;
}

function parseArgs(argv: readonly string[]): Options {
  const o: Options = { quick: false, runs: 5, json: false, r1Payload: 'i32' };
  let runsGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') o.quick = true;
    else if (a === '--json') o.json = true;
    else if (a === '--runs' || a.startsWith('--runs=')) {
      const v = a === '--runs' ? argv[++i] : a.slice('--runs='.length);
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--runs needs a positive integer, got ${v}`);
      o.runs = n;
      runsGiven = true;
    } else if (a === '--r1-payload') {
      const v = argv[++i];
      if (v !== 'i32' && v !== 'set' && v !== 'f64' && v !== 'none')
        throw new UsageError(`--r1-payload needs i32, set, f64 or none, got ${v}`);
      o.r1Payload = v;
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(
        'usage: node dist/native-bench/harness.js [--quick] [--runs N] [--json] [--r1-payload i32|set|f64|none]\n',
      );
      process.exit(0);
    } else throw new UsageError(`unknown argument ${a} (try --help)`);
  }
  if (o.quick && !runsGiven) o.runs = 1;
  return o;
}

/** Share of all CPUs busy over `ms` before the run (other processes steal cycles from spinning threads). */
async function busyShare(ms: number): Promise<number> {
  const sample = () =>
    os.cpus().reduce(
      (acc, c) => {
        const t = c.times;
        acc.idle += t.idle;
        acc.total += t.idle + t.user + t.nice + t.sys + t.irq;
        return acc;
      },
      { idle: 0, total: 0 },
    );
  const a = sample();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = sample();
  const total = b.total - a.total;
  return total > 0 ? 1 - (b.idle - a.idle) / total : 0;
}

function machine(): Record<string, unknown> {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpu = m[1]!.trim();
  } catch {
    // not Linux: keep os.cpus()'s name
  }
  let compiler = 'unknown';
  try {
    compiler = execFileSync(cxx(), ['--version'], { encoding: 'utf8' }).split('\n')[0]!.trim();
  } catch {
    // reported as unknown; buildNative() fails with the real error if it is needed
  }
  return {
    nproc: os.availableParallelism(),
    cpu,
    node: process.version,
    compiler,
    platform: `${os.platform()} ${os.release()}`,
    loadavg1m: Number(os.loadavg()[0]!.toFixed(2)),
  };
}

function cxx(): string {
  return process.env.CXX || 'g++';
}

/** Compiles ring.cpp unless the binary is newer than the source. Writes to a temp name, then renames. */
function buildNative(log: (s: string) => void): void {
  if (!existsSync(SOURCE)) throw new Error(`native source not found at ${SOURCE}`);
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs) return;
  mkdirSync(dirname(BINARY), { recursive: true });
  const tmp = `${BINARY}.${process.pid}.tmp`;
  log(`building ${BINARY} with ${cxx()} -O2 -std=c++17 -pthread`);
  try {
    execFileSync(cxx(), ['-O2', '-std=c++17', '-pthread', '-o', tmp, SOURCE], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (cause) {
    const stderr = (cause as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`compiling ring.cpp failed: ${(cause as Error).message}\n${stderr}`, { cause });
  }
  renameSync(tmp, BINARY);
}

async function runNative(args: readonly (string | number)[]): Promise<Record<string, number>> {
  const { stdout } = await execFileAsync(BINARY, args.map(String), { timeout: JOB_TIMEOUT_MS });
  const result = JSON.parse(stdout.trim()) as Record<string, number>;
  if ((result.errors ?? 0) !== 0)
    throw new Error(`native ring delivered ${result.errors} frames out of order`);
  return result;
}

/** Two worker threads, one per side of a ring, reused for every job so the JIT stays warm. */
class WorkerPair {
  private readonly a: Worker;
  private readonly b: Worker;

  constructor() {
    const url = new URL('./ring-worker.js', import.meta.url);
    this.a = new Worker(url);
    this.b = new Worker(url);
  }

  async run(jobA: Job, jobB: Job): Promise<[JobResult, JobResult]> {
    const signal = AbortSignal.timeout(JOB_TIMEOUT_MS);
    const answers = Promise.all([once(this.a, 'message', { signal }), once(this.b, 'message', { signal })]);
    // The consumer side starts first so the producer does not fill the ring before it listens.
    this.b.postMessage(jobB);
    this.a.postMessage(jobA);
    const [[ra], [rb]] = (await answers) as [[JobResult], [JobResult]];
    for (const r of [ra, rb]) {
      if ((r.errors ?? 0) !== 0)
        throw new Error(`TS ring job ${r.kind}: ${r.errors} frames wrong or out of order`);
    }
    return [ra, rb];
  }

  async close(): Promise<void> {
    await Promise.all([this.a.terminate(), this.b.terminate()]);
  }
}

function countsFor(quick: boolean): Counts {
  return quick
    ? { r1Frames: 2_000_000, r2Iterations: 20_000, r3Records: 300_000, p1Iterations: 300 }
    : { r1Frames: 10_000_000, r2Iterations: 200_000, r3Records: 3_000_000, p1Iterations: 2000 };
}

async function measureR1(pair: WorkerPair, o: Options, c: Counts, log: (s: string) => void): Promise<Row> {
  const warmup = Math.floor(c.r1Frames / 4); // same warm-up share as ring.cpp
  const ts: number[] = [];
  const native: number[] = [];
  const nativeSeqCst: number[] = [];
  for (let r = 0; r < o.runs; r++) {
    const n = await runNative(['throughput', c.r1Frames, PAYLOAD_BYTES, CAPACITY]);
    native.push(n.framesPerSec!);
    // Attribution: the native ring publishing with seq-cst stores, which is what Atomics.store is.
    const s = await runNative(['throughput', c.r1Frames, PAYLOAD_BYTES, CAPACITY, '--seq-cst']);
    nativeSeqCst.push(s.framesPerSec!);
    const ring = createRing(CAPACITY);
    const total = warmup + c.r1Frames;
    const [, res] = await pair.run(
      { kind: 'tput-producer', ring, total, payloadBytes: PAYLOAD_BYTES, fill: o.r1Payload },
      { kind: 'tput-consumer', ring, total, warmup },
    );
    ts.push(res.perSec!);
    log(
      `R1 run ${r + 1}: native ${fmt(n.framesPerSec!, 'frames/s')}, native seq-cst ` +
        `${fmt(s.framesPerSec!, 'frames/s')}, TS ${fmt(res.perSec!, 'frames/s')}`,
    );
  }
  const t = summarize(ts);
  const nat = summarize(native);
  const ratio = t.median / nat.median;
  return {
    id: 'R1',
    title: `${frameBytes(PAYLOAD_BYTES)}-byte frames, 1 → 1, spinning`,
    unit: 'frames/s',
    ts: t,
    native: nat,
    ratio,
    target: 'ratio ≥ 0.8',
    pass: ratio >= 0.8,
    detail: {
      frames: c.r1Frames,
      warmupFrames: warmup,
      payloadBytes: PAYLOAD_BYTES,
      payloadWrite: o.r1Payload,
      capacityBytes: CAPACITY,
      nativeSeqCstFramesPerSec: summarize(nativeSeqCst),
    },
  };
}

async function measureR2(pair: WorkerPair, o: Options, c: Counts, log: (s: string) => void): Promise<Row> {
  const warmup = Math.max(Math.floor(c.r2Iterations / 10), 1000); // as ring.cpp
  const total = warmup + c.r2Iterations;
  const ts: number[] = [];
  const native: number[] = [];
  const tsP99: number[] = [];
  const nativeP99: number[] = [];
  for (let r = 0; r < o.runs; r++) {
    const n = await runNative(['pingpong', c.r2Iterations, CAPACITY]);
    native.push(n.p50Ns!);
    nativeP99.push(n.p99Ns!);
    const ping = createRing(CAPACITY);
    const pong = createRing(CAPACITY);
    const [res] = await pair.run(
      { kind: 'pp-ping', out: ping, in: pong, total, warmup },
      { kind: 'pp-echo', in: ping, out: pong, total },
    );
    ts.push(res.p50Ns!);
    tsP99.push(res.p99Ns!);
    log(`R2 run ${r + 1}: native p50 ${fmt(n.p50Ns!, 'ns')}, TS p50 ${fmt(res.p50Ns!, 'ns')}`);
  }
  const t = summarize(ts);
  const nat = summarize(native);
  const ratio = t.median / nat.median;
  return {
    id: 'R2',
    title: 'ping-pong round trip p50, spinning',
    unit: 'ns',
    ts: t,
    native: nat,
    ratio,
    target: 'ratio ≤ 2.5',
    pass: ratio <= 2.5,
    detail: {
      iterations: c.r2Iterations,
      warmupIterations: warmup,
      tsP99Ns: summarize(tsP99),
      nativeP99Ns: summarize(nativeP99),
    },
  };
}

async function measureR3(pair: WorkerPair, o: Options, c: Counts, log: (s: string) => void): Promise<Row> {
  const warmup = Math.floor(c.r3Records / 4);
  const total = warmup + c.r3Records;
  const ts: number[] = [];
  const fullEvents: number[] = [];
  const emptyPolls: number[] = [];
  for (let r = 0; r < o.runs; r++) {
    const ring = createRing(CAPACITY);
    const [prod, res] = await pair.run(
      { kind: 'codec-producer', ring, total },
      { kind: 'codec-consumer', ring, total, warmup },
    );
    ts.push(res.perSec!);
    fullEvents.push(prod.fullEvents!);
    emptyPolls.push(res.emptyPolls!);
    log(`R3 run ${r + 1}: TS ${fmt(res.perSec!, 'records/s')}`);
  }
  const t = summarize(ts);
  // Encoded size of the pool the producer cycles (sequential records: the structure is sent once).
  const packr = new Packr({ sequential: true });
  const pool = paymentPool(4096);
  packr.pack(pool[0]); // the first use carries the record structure inline
  let bytes = 0;
  for (let i = 1; i < pool.length; i++) bytes += packr.pack(pool[i]).length;
  const meanRowBytes = bytes / (pool.length - 1);
  return {
    id: 'R3',
    title: 'msgpackr payments, FrameWriter → FrameReader',
    unit: 'records/s',
    ts: t,
    native: null,
    ratio: null,
    target: '≥ 2 M records/s',
    pass: t.median >= 2_000_000,
    detail: {
      records: c.r3Records,
      warmupRecords: warmup,
      meanRowBytes: Number(meanRowBytes.toFixed(1)),
      meanFrameBytes: Number(frameBytes(DATA_PREFIX_BYTES + meanRowBytes).toFixed(1)),
      // Which side limited the rate: rows that found the ring full vs polls that found it empty.
      producerFullEvents: summarize(fullEvents),
      consumerEmptyPolls: summarize(emptyPolls),
    },
  };
}

async function measureP1(pair: WorkerPair, o: Options, c: Counts, log: (s: string) => void): Promise<Row> {
  const warmup = Math.max(Math.floor(c.p1Iterations / 10), 10); // as ring.cpp
  const total = warmup + c.p1Iterations;
  const ts: number[] = [];
  const native: number[] = [];
  for (let r = 0; r < o.runs; r++) {
    const n = await runNative(['parked', c.p1Iterations, PARK_GAP_MICROS, CAPACITY]);
    native.push(n.p50Ns!);
    const bells = DoorbellTable.create(1);
    const ring = createRing(CAPACITY, 0);
    const [, res] = await pair.run(
      { kind: 'parked-writer', ring, bells: bells.sab, total, gapMicros: PARK_GAP_MICROS },
      { kind: 'parked-reader', ring, bells: bells.sab, total, warmup },
    );
    ts.push(res.p50Ns!);
    log(`P1 run ${r + 1}: native p50 ${fmt(n.p50Ns!, 'ns')}, TS p50 ${fmt(res.p50Ns!, 'ns')}`);
  }
  const t = summarize(ts);
  const nat = summarize(native);
  return {
    id: 'P1',
    title: 'one-way hand-off p50, reader parked',
    unit: 'ns',
    ts: t,
    native: nat,
    ratio: t.median / nat.median,
    target: 'information',
    pass: null,
    detail: { iterations: c.p1Iterations, warmupIterations: warmup, gapMicros: PARK_GAP_MICROS },
  };
}

function fmt(v: number, unit: Row['unit']): string {
  if (!Number.isFinite(v)) return String(v);
  if (unit === 'ns') return v >= 1000 ? `${(v / 1000).toFixed(2)} µs` : `${v.toFixed(0)} ns`;
  return `${(v / 1e6).toFixed(2)} M/s`;
}

function fmtSummary(s: Summary | null, unit: Row['unit']): string {
  if (s === null) return '—';
  if (s.runs.length === 1) return fmt(s.median, unit);
  return `${fmt(s.median, unit)} (${fmt(s.min, unit)}–${fmt(s.max, unit)})`;
}

function printTable(m: Record<string, unknown>, o: Options, rows: readonly Row[]): void {
  const out: string[] = [];
  out.push('Millrace ring benchmark: TypeScript SAB ring vs native C++ ring, same run');
  out.push(
    `machine: nproc ${m.nproc}, ${m.cpu}, node ${m.node}, ${m.compiler}, load ${m.loadavg1m}, ` +
      `${m.cpuBusyBeforeRunPct} % busy before the run ` +
      `| ${o.runs} run${o.runs === 1 ? '' : 's'}${o.quick ? ' (quick)' : ''}, median (min–max)`,
  );
  const header = ['id', 'measure', 'TS ring', 'native ring', 'ratio', 'target', 'result'];
  const cells = rows.map((r) => [
    r.id,
    r.title,
    fmtSummary(r.ts, r.unit),
    fmtSummary(r.native, r.unit),
    r.ratio === null ? '—' : r.ratio.toFixed(2),
    r.target,
    r.pass === null ? 'info' : r.pass ? 'PASS' : 'MISS',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  out.push('', line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line));
  const r1 = rows.find((r) => r.id === 'R1');
  if (r1) {
    const sc = (r1.detail as { nativeSeqCstFramesPerSec: Summary }).nativeSeqCstFramesPerSec;
    out.push(
      '',
      `R1 native ring publishing head/tail with seq-cst stores (what Atomics.store is): ` +
        `${fmtSummary(sc, 'frames/s')}; TS / that = ${(r1.ts.median / sc.median).toFixed(2)} ` +
        `(TS payload written with ${(r1.detail as { payloadWrite: PayloadFill }).payloadWrite})`,
    );
  }
  const r2 = rows.find((r) => r.id === 'R2');
  if (r2) {
    const d = r2.detail as { tsP99Ns: Summary; nativeP99Ns: Summary };
    out.push(`R2 p99: TS ${fmtSummary(d.tsP99Ns, 'ns')}, native ${fmtSummary(d.nativeP99Ns, 'ns')}`);
  }
  const r3 = rows.find((r) => r.id === 'R3');
  if (r3) {
    const d = r3.detail as {
      meanRowBytes: number;
      meanFrameBytes: number;
      producerFullEvents: Summary;
      consumerEmptyPolls: Summary;
    };
    out.push(
      `R3 payment: ${d.meanRowBytes} bytes encoded (msgpackr sequential record), ${d.meanFrameBytes} bytes per frame`,
      `R3 bound by: ${d.producerFullEvents.median} rows per run found the ring full (consumer slower), ` +
        `${d.consumerEmptyPolls.median} polls found it empty (producer slower) (medians)`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const log = o.json ? () => {} : (s: string) => process.stderr.write(`${s}\n`);
  const m = machine();
  const busy = await busyShare(500);
  m.cpuBusyBeforeRunPct = Math.round(busy * 100);
  if (busy > 0.2) {
    log(
      `warning: ${Math.round(busy * 100)} % of the CPUs were busy before the run; the figures will be noisy`,
    );
  }
  buildNative(log);
  const c = countsFor(o.quick);
  const pair = new WorkerPair();
  const rows: Row[] = [];
  try {
    rows.push(await measureR1(pair, o, c, log));
    rows.push(await measureR2(pair, o, c, log));
    rows.push(await measureR3(pair, o, c, log));
    rows.push(await measureP1(pair, o, c, log));
  } finally {
    await pair.close();
  }
  if (o.json) {
    const results = Object.fromEntries(rows.map((r) => [r.id, r]));
    const config = { runs: o.runs, quick: o.quick, capacityBytes: CAPACITY, counts: c };
    process.stdout.write(`${JSON.stringify({ machine: m, config, results }, null, 2)}\n`);
  } else {
    printTable(m, o, rows);
  }
}

main().catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  process.stderr.write(
    `ring harness failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exitCode = 1;
});
