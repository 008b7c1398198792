// The module's binding: the global `performance` is a lazy getter, dearer per call.
import { performance } from 'node:perf_hooks';
import { threadId } from 'node:worker_threads';
import { withLayouts } from '../../connectors/layouts.js';
import { ErrorCode, MillraceError, serializeError } from '../../errors.js';
import { loadArrow } from '../../operators/arrow/arrow-module.js';
import { planFingerprint } from '../../plan/fingerprint.js';
import { DoorbellTable } from '../channel/doorbell.js';
import { RingConsumer, RingProducer } from '../channel/spsc-ring.js';
import { importJob, planJob } from '../job-loader.js';
import type { UdfWorkerMessage, UdfWorkerSpec } from '../messages.js';
import { ChannelServer } from './channel-server.js';
import { udfRunner } from './udf-runner.js';

/**
 * While spinning idle, the thread polls its request rings this many times between clock reads:
 * V8 boxes every clock reading, and a spin that reads the clock on each turn fills the young
 * generation with them, for collections that stall the answers.
 */
const IDLE_POLLS = 1024;

/** While busy, the loop lets the event loop turn at least this often. */
const YIELD_EVERY_MS = 2;

/**
 * A thread of the UDF pool: the Piscina task that runs the Arrow UDFs and mapInArrow functions of
 * the channels dealt to it, for the life of the query. It imports the job module, builds the plan
 * (checked by fingerprint, as hosts do) and finds each channel's function by its operator's place
 * in the plan. Then it answers each request batch in order: polling while busy, spinning briefly
 * when idle, then parking on its doorbell (an idle query costs no CPU). A function that throws is
 * answered with its error (the task applies the query's bad-record policy to the batch's rows);
 * anything else that goes wrong here fails the query.
 */
export default async function runUdfWorker(spec: UdfWorkerSpec): Promise<void> {
  const { port, workerIndex } = spec;
  const send = (m: UdfWorkerMessage) => port.postMessage(m);
  try {
    await loadArrow();
    const job = await importJob(spec.jobUrl);
    const plan = withLayouts(spec.layouts, () => planJob(job, spec.params, spec.jobUrl, spec.cut));
    if (planFingerprint(plan, true) !== spec.fingerprint) {
      throw new MillraceError(
        ErrorCode.PLAN_MISMATCH,
        `the job built a different plan in UDF worker ${workerIndex} than in the driver: build(job) must be deterministic`,
      );
    }
    const bells = new DoorbellTable(spec.bells);
    const served = spec.channels.map(
      (c) =>
        new ChannelServer(
          new RingConsumer(c.request, bells),
          new RingProducer(c.response, bells),
          udfRunner(plan.operators[c.operatorId]!),
        ),
    );
    send({ type: 'ready', workerIndex, threadId });
    await serve(spec, bells, served);
  } catch (e) {
    send({ type: 'failed', workerIndex, error: serializeError(e) });
    // The thread is not given back to the process's reserve: its driver ends it.
    await new Promise<never>(() => {});
  }
}

async function serve(
  spec: UdfWorkerSpec,
  bells: DoorbellTable,
  served: readonly ChannelServer[],
): Promise<void> {
  const control = new Int32Array(spec.control);
  const spinMs = Math.max(spec.spinMicros, spec.answeredSpinMicros) / 1000;
  let idleSince = 0;
  let lastYield = performance.now();
  for (;;) {
    if (Atomics.load(control, 0) !== 0) return;
    let busy = false;
    for (const s of served) if (s.answer()) busy = true;
    const now = performance.now();
    if (busy) {
      idleSince = 0;
      if (now - lastYield > YIELD_EVERY_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
      continue;
    }
    if (idleSince === 0) idleSince = now;
    if (now - idleSince < spinMs) {
      pollRequests(served);
      continue;
    }
    // Park: announce sleep, look once more (see doorbell.ts), then wait to be rung.
    const seq = bells.prepareToPark(spec.bell);
    if (Atomics.load(control, 0) !== 0 || served.some((s) => s.canAnswer())) {
      bells.unpark(spec.bell);
      idleSince = 0;
      continue;
    }
    const wait = bells.parkAsync(spec.bell, seq, Number.POSITIVE_INFINITY);
    if (wait !== undefined) await wait;
    bells.unpark(spec.bell);
    idleSince = 0;
    lastYield = performance.now();
  }
}

/** Polls the request rings up to {@link IDLE_POLLS} times, until one has a frame. */
function pollRequests(served: readonly ChannelServer[]): void {
  for (let k = 0; k < IDLE_POLLS; k++) {
    for (let i = 0; i < served.length; i++) if (served[i]!.hasRequest()) return;
  }
}
