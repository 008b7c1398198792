/**
 * The two threads of the `postMessage` baseline: what a Node developer would write without
 * Millrace. The generator makes the same payments as Millrace's generator source, on the same
 * constant-rate schedule, and posts each row (stamped with its scheduled time) over a
 * MessageChannel; the processor filters, maps, hands the row to an empty sink and records
 * e2e latency (emit time − scheduled time) into an HDR histogram, in µs like the engine.
 *
 * The generator polls its schedule through `setImmediate`, so it sends every row on time (as
 * Millrace's spinning generator host does): the baseline pays only for the hand-off itself.
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as hdr from 'hdr-histogram-js';
import { sources } from '../connectors/index.js';
import { GeneratorSchedule } from '../connectors/schedule.js';
import { type Payment, payment } from '../demo/payments.js';
import {
  type BaselineEvent,
  type BaselineWorkerData,
  type GeneratorData,
  kProcessedField,
  kSentField,
  kStopField,
  type ProcessorCommand,
  type ProcessorData,
  sharedNow,
} from './postmessage-protocol.js';
import { enrich, screen } from './stateless-stage.js';

/** Rows posted per turn of the generator's loop at most, so a stop request is seen promptly. */
const POST_BUDGET = 1024;

const send = (event: BaselineEvent) => parentPort!.postMessage(event);

function runGenerator(data: GeneratorData): void {
  const { port, maxInFlight } = data;
  const counters = new Int32Array(data.counters);
  const startTime = sharedNow();
  // The engine's own schedule: row i is due at start + (i + 1) / rate.
  const schedule = new GeneratorSchedule(
    sources.generator({ rowsPerSecond: data.rowsPerSecond, generate: payment }),
    startTime,
  );
  let next = 0;
  send({ type: 'started', startTime });
  const tick = (): void => {
    if (Atomics.load(counters, kStopField) !== 0) {
      port.close();
      return;
    }
    const due = schedule.dueCount(sharedNow());
    // Holding off when the processor is far behind bounds memory; held rows keep their
    // scheduled time, so the delay still counts against latency.
    const limit = Math.min(due, next + POST_BUDGET, Atomics.load(counters, kProcessedField) + maxInFlight);
    while (next < limit) {
      port.postMessage(payment(0, next, schedule.dueTime(next)));
      next++;
    }
    Atomics.store(counters, kSentField, next);
    setImmediate(tick);
  };
  setImmediate(tick);
}

async function runProcessor(data: ProcessorData): Promise<void> {
  await hdr.initWebAssembly();
  const histogram = hdr.build({
    lowestDiscernibleValue: 1,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: true,
  });
  const counters = new Int32Array(data.counters);
  let processed = 0;
  // The blackhole, as Millrace's foreach sink `process: () => {}`.
  const sink = (_row: unknown): void => {};
  data.port.on('message', (row: Payment) => {
    if (screen(row)) {
      sink(enrich(row));
      const micros = Math.round((sharedNow() - row.ts) * 1000);
      histogram.recordValue(Math.max(micros, 0));
    }
    Atomics.store(counters, kProcessedField, ++processed);
  });
  parentPort!.on('message', (command: ProcessorCommand) => {
    if (command.type === 'reset') {
      histogram.reset();
      send({ type: 'reset', processed });
    } else {
      send({ type: 'report', histogram: hdr.encodeIntoCompressedBase64(histogram), processed });
    }
  });
  send({ type: 'ready' });
}

const data = workerData as BaselineWorkerData;
if (data.role === 'generator') runGenerator(data);
else await runProcessor(data);
