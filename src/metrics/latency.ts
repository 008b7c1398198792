import * as hdr from 'hdr-histogram-js';

/**
 * Latency histograms. Every worker records into HDR histograms (WebAssembly build: ≈ 34 ns a value)
 * in microseconds; at each progress interval it ships them to the driver in HdrHistogram's plain
 * V2 encoding (≈ 0.1 ms each; the compressed base64 form costs ≈ 1 ms, a stall on a busy worker),
 * resets, and the driver merges. Percentiles are computed on the driver, off the record path.
 *
 * - e2e: sink emit − the row's source time (Kafka timestamp, or a generated row's scheduled time);
 * - processing: sink emit − the moment the row left the source reader;
 * - sourceQueuing: source read − source time.
 */
export const LATENCY_KINDS = ['e2e', 'processing', 'sourceQueuing'] as const;
export type LatencyKind = (typeof LATENCY_KINDS)[number];

/** Percentiles in milliseconds (same keys everywhere). */
export interface LatencyQuantiles {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/** The long form, for benchmarks and the end-of-run summary. */
export interface LatencySummary extends LatencyQuantiles {
  p9999: number;
  count: number;
  mean: number;
}

/** Histograms in HdrHistogram's V2 encoding, copied out of WebAssembly memory. */
export type EncodedLatency = Record<LatencyKind, Uint8Array>;

const HISTOGRAM_OPTIONS = { lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 } as const;

let wasmReady: Promise<void> | undefined;

/** Loads the WebAssembly histogram implementation once per thread. */
export function initHistograms(): Promise<void> {
  wasmReady ??= hdr.initWebAssembly();
  return wasmReady;
}

/** Records latencies in one worker thread. Call {@link initHistograms} first. */
export class LatencyRecorder {
  private readonly e2e = wasmHistogram();
  private readonly processing = wasmHistogram();
  private readonly queuing = wasmHistogram();

  /** Hot path: three integer records, no allocation. Times in ms, recorded in µs. */
  record(sourceTime: number, readTime: number, now: number): void {
    this.e2e.recordValue(toMicros(now - sourceTime));
    this.processing.recordValue(toMicros(now - readTime));
    this.queuing.recordValue(toMicros(readTime - sourceTime));
  }

  get count(): number {
    return this.e2e.totalCount;
  }

  /** Compresses what was recorded since the last drain and starts afresh. */
  drain(): EncodedLatency {
    // slice(): the encoding may be a view of WebAssembly memory, which must not be posted.
    const out = {
      e2e: this.e2e.encode().slice(),
      processing: this.processing.encode().slice(),
      sourceQueuing: this.queuing.encode().slice(),
    };
    this.e2e.reset();
    this.processing.reset();
    this.queuing.reset();
    return out;
  }

  destroy(): void {
    this.e2e.destroy();
    this.processing.destroy();
    this.queuing.destroy();
  }
}

function wasmHistogram(): hdr.WasmHistogram {
  return hdr.build({ ...HISTOGRAM_OPTIONS, useWebAssembly: true }) as hdr.WasmHistogram;
}

/** HdrHistogram's decoder of the plain V2 encoding (attached to JsHistogram by the library). */
const decodeV2 = (
  hdr.JsHistogram as unknown as { decode(data: Uint8Array, bitBucketSize: 32): hdr.Histogram }
).decode;

function toMicros(ms: number): number {
  const us = Math.round(ms * 1000);
  return Math.max(us, 0);
}

/** Merges workers' histograms on the driver: one set per progress interval, one for the whole run. */
export class LatencyAggregator {
  private interval = emptySet();
  private total = emptySet();
  private lastInterval: hdr.Histogram | null = null;

  add(encoded: EncodedLatency): void {
    for (const kind of LATENCY_KINDS) {
      const h = decodeV2(encoded[kind], 32);
      this.interval[kind].add(h);
      this.total[kind].add(h);
    }
  }

  /** Quantiles of the interval since the last call, then starts a new interval. */
  takeInterval(): Record<LatencyKind, LatencyQuantiles> {
    const out = {
      e2e: quantiles(this.interval.e2e),
      processing: quantiles(this.interval.processing),
      sourceQueuing: quantiles(this.interval.sourceQueuing),
    };
    this.lastInterval = this.interval.e2e;
    this.interval = emptySet();
    return out;
  }

  /** The e2e histogram of the interval {@link takeInterval} last closed (null before any). */
  lastIntervalE2e(): hdr.Histogram | null {
    return this.lastInterval;
  }

  /** Summary of the whole run so far. */
  summary(): Record<LatencyKind, LatencySummary> {
    return {
      e2e: summarize(this.total.e2e),
      processing: summarize(this.total.processing),
      sourceQueuing: summarize(this.total.sourceQueuing),
    };
  }

  /** Adds an earlier attempt's whole-run totals to this one's (a query restarted by its policy). */
  carryTotal(earlier: LatencyAggregator): void {
    for (const kind of LATENCY_KINDS) this.total[kind].add(earlier.total[kind]);
  }

  /** Forgets the whole-run totals (e.g. after a warm-up); intervals are unaffected. */
  resetTotal(): void {
    this.total = emptySet();
  }

  /** The whole run's e2e histogram (for percentile-distribution files and plots). */
  e2eHistogram(): hdr.Histogram {
    return this.total.e2e;
  }
}

function emptySet(): Record<LatencyKind, hdr.Histogram> {
  return {
    e2e: hdr.build(HISTOGRAM_OPTIONS),
    processing: hdr.build(HISTOGRAM_OPTIONS),
    sourceQueuing: hdr.build(HISTOGRAM_OPTIONS),
  };
}

const ms = (us: number): number => Math.round(us) / 1000;

/**
 * A percentile in ms. HDR reports the top of the value's bucket, which can exceed the exact
 * maximum; no percentile is reported above it.
 */
function at(h: hdr.Histogram, percentile: number): number {
  return ms(Math.min(h.getValueAtPercentile(percentile), h.maxValue));
}

export function quantiles(h: hdr.Histogram): LatencyQuantiles {
  if (h.totalCount === 0) return { p50: 0, p90: 0, p99: 0, p999: 0, max: 0 };
  return { p50: at(h, 50), p90: at(h, 90), p99: at(h, 99), p999: at(h, 99.9), max: ms(h.maxValue) };
}

export function summarize(h: hdr.Histogram): LatencySummary {
  return {
    ...quantiles(h),
    p9999: h.totalCount === 0 ? 0 : at(h, 99.99),
    count: h.totalCount,
    mean: h.totalCount === 0 ? 0 : ms(h.mean),
  };
}
