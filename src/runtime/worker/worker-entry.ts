import { threadId } from 'node:worker_threads';
import { withLayouts } from '../../connectors/layouts.js';
import { ErrorCode, MillraceError, serializeError } from '../../errors.js';
import { initHistograms } from '../../metrics/latency.js';
import { loadArrow } from '../../operators/arrow/arrow-module.js';
import { planFingerprint } from '../../plan/fingerprint.js';
import { planPhysical, runsArrowCode } from '../../plan/physical.js';
import { importJob, planJob } from '../job-loader.js';
import type { DriverMessage, HostMessage, HostSpec } from '../messages.js';
import { Host } from './host.js';
import { TaskFailure } from './row-problems.js';
import { loadStaticTables } from './static-tables.js';

/**
 * The Piscina task that hosts a set of long-running tasks on this worker thread. It imports the
 * same job module as the driver, builds the same plan (checked by fingerprint), announces itself
 * ready and runs the host loop until the query ends. Failures are reported on the port, located.
 */
export default async function runHost(spec: HostSpec): Promise<void> {
  // A thread whose run ended cleanly goes back to the process's reserve for the next query's host;
  // after a failure or an abort, what the run may have left behind (a sink's write in flight, a
  // timer) must not reach another query: the task waits here for its driver to end the thread.
  if (!(await hostTasks(spec))) await new Promise<never>(() => {});
}

/** Hosts the tasks until the query ends; true when every task ran to its end. */
async function hostTasks(spec: HostSpec): Promise<boolean> {
  const { port, hostIndex } = spec;
  const send = (m: HostMessage) => port.postMessage(m);
  let host: Host | undefined;
  try {
    await initHistograms();
    const job = await importJob(spec.jobUrl);
    const plan = withLayouts(spec.layouts, () => planJob(job, spec.params, spec.jobUrl, spec.cut));
    const fingerprint = planFingerprint(plan, true);
    if (fingerprint !== spec.fingerprint) {
      throw new MillraceError(
        ErrorCode.PLAN_MISMATCH,
        `the job built a different plan in worker ${hostIndex} than in the driver: build(job) must be ` +
          'deterministic (same parameters, same plan; no randomness or clock reads while building)',
      );
    }
    const physical = planPhysical(plan, spec.physical);
    // Arrow operators are built synchronously with the tasks: their package loads first.
    if (spec.tasks.some((t) => physical.stages[t.stage]!.chain.some((op) => runsArrowCode(op.node))))
      await loadArrow();
    const statics = await loadStaticTables(plan, physical, spec.tasks);
    host = new Host(spec, plan, physical, statics);
    const ready = host;
    port.on('message', (m: DriverMessage) => {
      if (m.type === 'commitSink') {
        ready.commitSinks(m.epoch).then(
          () => send({ type: 'sinkCommitted', hostIndex, epoch: m.epoch }),
          (e: unknown) =>
            send({
              type: 'sinkCommitted',
              hostIndex,
              epoch: m.epoch,
              error: serializeError(e, ready.location()),
            }),
        );
      }
    });
    send({ type: 'ready', hostIndex, threadId });
    const clean = await host.run();
    host.report(-1, clean);
    return clean;
  } catch (e) {
    const error = e instanceof TaskFailure ? e.serialized : serializeError(e, host?.location());
    host?.abort(e instanceof Error ? e : new Error(String(e)));
    if (host) host.report(-1);
    send({ type: 'failed', hostIndex, error });
    return false;
  } finally {
    port.removeAllListeners('message');
    host?.dispose();
  }
}
