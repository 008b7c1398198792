import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { Kafka, logLevel } from 'kafkajs';
import type { StreamingQuery } from '../runtime/driver/streaming-query.js';
import { formatRate } from './format.js';
import type { KafkaLoadSpec } from './kafka-load-worker.js';
import type { MillraceJob } from './millrace-run.js';
import { latencyChecks, type MillraceScenarioResult, runMillraceScenario } from './millrace-scenario.js';
import { K_RATE, K1_P99_MS, K2_P99_MS } from './targets.js';
import type { BenchIO, CommonOptions } from './types.js';

const JOB = new URL('./kafka-loop-job.js', import.meta.url);
const LOAD_WORKER = new URL('./kafka-load-worker.js', import.meta.url);

export type KafkaLoopKind = 'stateless' | 'count';

export interface KafkaLoopOptions extends CommonOptions {
  brokers: string[];
  /** Partitions of the input and output topics. */
  partitions: number;
  /** The source's fetchMaxWait, ms. */
  fetchMaxWaitMs: number;
  keys: number;
}

export type KafkaLoopResult = MillraceScenarioResult<string, KafkaLoopOptions>;

/**
 * A benchmark job with Kafka in the loop: before each run, fresh input and output topics; once the
 * query runs, the load generator thread at the run's rate; after it, the generator stops and the
 * topics are deleted.
 */
class KafkaLoop {
  private rate = 0;
  private topics: { in: string; out: string } | null = null;
  private load: Worker | null = null;
  private readonly kafka: Kafka;

  constructor(private readonly o: KafkaLoopOptions) {
    this.kafka = new Kafka({ clientId: 'millrace-bench', brokers: o.brokers, logLevel: logLevel.NOTHING });
  }

  job(kind: KafkaLoopKind): MillraceJob {
    return {
      url: JOB,
      params: {},
      clocks: 'threads',
      stopTimeoutMs: 10_000,
      prepare: (rate) => this.prepare(kind, rate),
      cleanup: () => this.cleanup(),
      observer: {
        started: (q: StreamingQuery) => this.startLoad(q),
        window: () => {},
        stopped: () => false,
      },
    };
  }

  private async prepare(kind: KafkaLoopKind, rate: number): Promise<Record<string, string | number>> {
    this.rate = rate;
    const id = randomUUID().slice(0, 8);
    this.topics = { in: `millrace-bench-in-${id}`, out: `millrace-bench-out-${id}` };
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [this.topics.in, this.topics.out].map((topic) => ({
          topic,
          numPartitions: this.o.partitions,
        })),
      });
    } finally {
      await admin.disconnect();
    }
    const params: Record<string, string | number> = {
      brokers: this.o.brokers.join(','),
      inTopic: this.topics.in,
      outTopic: this.topics.out,
      case: kind,
      fetchMaxWait: this.o.fetchMaxWaitMs,
    };
    if (this.o.spinMicros !== undefined) params.spinMicros = this.o.spinMicros;
    return params;
  }

  private startLoad(_q: StreamingQuery): void {
    const spec: KafkaLoadSpec = {
      brokers: this.o.brokers,
      topic: this.topics!.in,
      partitions: this.o.partitions,
      rowsPerSecond: this.rate,
      keys: this.o.keys,
    };
    this.load = new Worker(LOAD_WORKER, { workerData: spec });
    this.load.on('message', (m: { type: string; message?: string }) => {
      if (m.type === 'failed')
        process.stderr.write(`millrace bench: the Kafka load generator failed: ${m.message}\n`);
    });
  }

  private async cleanup(): Promise<void> {
    const load = this.load;
    this.load = null;
    if (load !== null) {
      const exited = once(load, 'exit');
      load.postMessage('stop');
      const timer = setTimeout(() => void load.terminate(), 10_000);
      await exited;
      clearTimeout(timer);
    }
    const topics = this.topics;
    this.topics = null;
    if (topics === null) return;
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      await admin.deleteTopics({ topics: [topics.in, topics.out] }).catch(() => {});
    } finally {
      await admin.disconnect();
    }
  }
}

/** K1 (stateless) or K2 (windowed count) with Kafka in the loop. */
export function runKafkaLoop(
  kind: KafkaLoopKind,
  o: KafkaLoopOptions,
  io: BenchIO,
  signal: AbortSignal,
): Promise<KafkaLoopResult> {
  const loop = new KafkaLoop(o);
  const query =
    kind === 'stateless'
      ? 'filter → map (no shuffle)'
      : "withWatermark('ts', 2 s) → hash shuffle by card → groupBy(window('ts', 1 s), cardId).agg(count), update mode";
  return runMillraceScenario(
    {
      scenario: kind === 'stateless' ? 'stateless-kafka' : 'windowed-count-kafka',
      description:
        `Kafka (${o.brokers.join(',')}, ${o.partitions} partitions, JSON payments) → sources.kafka → ${query} → ` +
        'sinks.kafka (idempotent producer), 2 workers',
      baseline:
        'none: Kafka in the loop is measured for Millrace only (anchors: Spark real-time mode, Flink)',
      job: loop.job(kind),
      plotTitle: (rate) =>
        `Kafka → ${kind === 'stateless' ? 'stateless' : 'windowed count'} → Kafka, ${formatRate(rate)} rows/s: e2e latency by percentile`,
      search: { start: K_RATE, maxWarmupMs: 4000, step: 1000 },
      targets: (rates) =>
        kind === 'stateless'
          ? latencyChecks('K1', rates, K_RATE, [{ percentile: 'p99', ms: K1_P99_MS }])
          : latencyChecks('K2', rates, K_RATE, [{ percentile: 'p99', ms: K2_P99_MS }]),
    },
    o,
    io,
    signal,
  );
}
