import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, Worker } from 'node:worker_threads';
import * as hdr from 'hdr-histogram-js';
import { sources } from '../connectors/index.js';
import { GeneratorSchedule } from '../connectors/schedule.js';
import { payment } from '../demo/payments.js';
import { summarize } from '../metrics/latency.js';
import { workerExecArgv } from '../util/worker-exec-argv.js';
import {
  type BaselineEvent,
  DEFAULT_MAX_IN_FLIGHT,
  type GeneratorData,
  kFieldCount,
  kProcessedField,
  kStopField,
  type ProcessorCommand,
  type ProcessorData,
  sharedNow,
} from './postmessage-protocol.js';
import { judgeSustainable } from './sustainability.js';
import type { MeasuredRun, RunSettings } from './types.js';

const WORKER_FILE = new URL('./postmessage-worker.js', import.meta.url);
/** How often the backlog is sampled (as often as Millrace reports progress). */
const SAMPLE_INTERVAL_MS = 1000;

/**
 * The events of one worker, queued as they arrive, so none is missed between two waits; a worker
 * that fails or exits makes every wait reject.
 */
class Inbox {
  private readonly queue: BaselineEvent[] = [];
  private waiter: {
    type: BaselineEvent['type'];
    resolve: (e: BaselineEvent) => void;
    reject: (e: Error) => void;
  } | null = null;
  private failure: Error | null = null;

  constructor(
    readonly worker: Worker,
    role: string,
  ) {
    worker.on('message', (event: BaselineEvent) => {
      this.queue.push(event);
      this.deliver();
    });
    worker.on('error', (e) => this.fail(e));
    worker.on('exit', (code) => this.fail(new Error(`the baseline's ${role} worker exited (code ${code})`)));
  }

  next<T extends BaselineEvent['type']>(type: T): Promise<Extract<BaselineEvent, { type: T }>> {
    return new Promise((resolve, reject) => {
      this.waiter = { type, resolve: resolve as (e: BaselineEvent) => void, reject };
      this.deliver();
    });
  }

  private deliver(): void {
    const w = this.waiter;
    if (w === null) return;
    if (this.failure !== null) {
      this.waiter = null;
      w.reject(this.failure);
      return;
    }
    const i = this.queue.findIndex((e) => e.type === w.type);
    if (i < 0) return;
    const [event] = this.queue.splice(i, 1);
    this.waiter = null;
    w.resolve(event!);
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.deliver();
  }
}

function spawn(data: GeneratorData | ProcessorData): Worker {
  return new Worker(WORKER_FILE, {
    workerData: data,
    transferList: [data.port],
    // Under `node --test` the test runner's flags must not reach the worker.
    execArgv: workerExecArgv(),
  });
}

/**
 * One run of the `postMessage` baseline at a constant rate: a generator worker posts each payment
 * to a processor worker, which filters, maps and records e2e latency. Warm-up and window as for
 * Millrace: the processor's histogram is reset after the warm-up and read at the end of the window.
 */
export async function runPostMessage(settings: RunSettings): Promise<MeasuredRun> {
  const { rate, signal } = settings;
  signal.throwIfAborted();
  const counters = new Int32Array(new SharedArrayBuffer(kFieldCount * Int32Array.BYTES_PER_ELEMENT));
  const { port1, port2 } = new MessageChannel();
  const workers: Worker[] = [];
  try {
    const processor = new Inbox(
      spawn({ role: 'processor', port: port2, counters: counters.buffer as SharedArrayBuffer }),
      'processor',
    );
    workers.push(processor.worker);
    await processor.next('ready');
    const generator = new Inbox(
      spawn({
        role: 'generator',
        port: port1,
        rowsPerSecond: rate,
        maxInFlight: DEFAULT_MAX_IN_FLIGHT,
        counters: counters.buffer as SharedArrayBuffer,
      }),
      'generator',
    );
    workers.push(generator.worker);
    const { startTime } = await generator.next('started');
    const schedule = new GeneratorSchedule(
      sources.generator({ rowsPerSecond: rate, generate: payment }),
      startTime,
    );
    const backlog = () =>
      Math.max(0, schedule.dueCount(sharedNow()) - Atomics.load(counters, kProcessedField));
    const command = (c: ProcessorCommand) => processor.worker.postMessage(c);

    await sleep(settings.warmupMs, undefined, { signal });
    const reset = processor.next('reset');
    command({ type: 'reset' });
    await reset;
    const windowStart = performance.now();
    const samples: number[] = [];
    for (let left = settings.durationMs; left > 0; left -= SAMPLE_INTERVAL_MS) {
      await sleep(Math.min(left, SAMPLE_INTERVAL_MS), undefined, { signal });
      if (left >= SAMPLE_INTERVAL_MS) samples.push(backlog());
    }
    const reported = processor.next('report');
    command({ type: 'report' });
    const report = await reported;
    const windowMs = performance.now() - windowStart;
    samples.push(backlog());
    const histogram = hdr.decodeFromCompressedBase64(report.histogram, 32, false);
    const latency = summarize(histogram);
    const growth = Math.max(0, (rate * windowMs) / 1000 - latency.count);
    const finalBacklog = samples.at(-1)!;
    const verdict = judgeSustainable({
      rate,
      p99Ms: latency.p99,
      count: latency.count,
      finalBacklog,
      backlogGrowth: growth,
    });
    return {
      run: {
        system: 'postmessage',
        rate,
        windowMs,
        latency,
        throughput: (latency.count * 1000) / windowMs,
        backlog: { final: finalBacklog, max: Math.max(...samples), samples, growth },
        clockSkewMs: null,
        ...verdict,
      },
      histogram,
    };
  } finally {
    Atomics.store(counters, kStopField, 1);
    port1.close();
    port2.close();
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
