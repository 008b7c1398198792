import { setTimeout as sleep } from 'node:timers/promises';
import { startQuery } from '../runtime/driver/start-query.js';
import { foreignCpuLoad, type MachineInfo, machineInfo } from './machine.js';
import { check, I1_CPU_PERCENT, type TargetCheck } from './targets.js';

const IDLE_JOB = new URL('./idle-job.js', import.meta.url);

export const IDLE_DESCRIPTION =
  'memory source that receives no row → hash shuffle (1 thread hop) → filter → map → foreach, 2 workers';

export interface IdleOptions {
  durationMs: number;
  warmupMs: number;
  json: boolean;
}

export interface IdleResult {
  scenario: 'idle';
  description: string;
  machine: MachineInfo;
  warmupMs: number;
  windowMs: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** CPU time over wall time, in % of one core. */
  cpuPercent: number;
  progressReports: number;
  /** CPU time (ms) of each whole second of the window. */
  perSecondMs: number[];
  /** CPU used by other processes just before the query started, in % of all CPUs. */
  foreignCpuPercent: number;
  targets: TargetCheck[];
}

const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;

/**
 * I1: an idle query must cost (almost) nothing. Its workers park on their doorbells; what remains
 * is the driver's progress timer and the hosts' reports, once a second.
 */
export async function runIdle(o: IdleOptions, signal: AbortSignal): Promise<IdleResult> {
  signal.throwIfAborted();
  const foreignCpuPercent = Math.round(await foreignCpuLoad());
  const q = await startQuery(IDLE_JOB);
  try {
    const failed = q.awaitTermination().then(() => {
      throw new Error('the benchmark query ended before the run did');
    });
    failed.catch(() => {});
    const wait = (ms: number) => Promise.race([sleep(ms, undefined, { signal }), failed]);
    await wait(o.warmupMs);
    let progressReports = 0;
    const onProgress = () => progressReports++;
    q.on('progress', onProgress);
    const before = process.cpuUsage();
    const start = performance.now();
    // CPU time second by second too: bursts (garbage collections) show up there.
    const perSecondMs: number[] = [];
    let last = before;
    for (let left = o.durationMs; left > 0; left -= 1000) {
      await wait(Math.min(left, 1000));
      const now = process.cpuUsage();
      if (left >= 1000) perSecondMs.push(cpuMs(now) - cpuMs(last));
      last = now;
    }
    const used = process.cpuUsage(before);
    const windowMs = performance.now() - start;
    q.off('progress', onProgress);
    const cpuPercent = ((used.user + used.system) / 1000 / windowMs) * 100;
    return {
      scenario: 'idle',
      description: IDLE_DESCRIPTION,
      machine: machineInfo(),
      warmupMs: o.warmupMs,
      windowMs,
      cpuUserMs: used.user / 1000,
      cpuSystemMs: used.system / 1000,
      cpuPercent,
      progressReports,
      perSecondMs,
      foreignCpuPercent,
      targets: [check('I1', 'idle query CPU, % of one core', cpuPercent, '%', '<=', I1_CPU_PERCENT)],
    };
  } finally {
    await q.stop();
  }
}
