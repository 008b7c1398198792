import os from 'node:os';
import { heapGrowthInForce, singleThreadedGc } from '../util/gc-settings.js';

/** The machine a benchmark ran on, printed with every result. */
export interface MachineInfo {
  /** Cores this process may use (what `nproc` prints). */
  nproc: number;
  cpuModel: string;
  node: string;
  platform: string;
  arch: string;
  totalMemoryGiB: number;
  /** How the process collects garbage (`--gc`, see src/cli/relaunch.ts). */
  gc: 'single-threaded' | 'V8 default';
  /** How far the old generation grows between full collections, in % (`--heap-growth`); null: V8 chooses. */
  heapGrowth: number | null;
}

export function machineInfo(): MachineInfo {
  return {
    nproc: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() || 'unknown',
    node: process.version,
    platform: os.platform(),
    arch: os.arch(),
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    gc: singleThreadedGc() ? 'single-threaded' : 'V8 default',
    heapGrowth: heapGrowthInForce(),
  };
}

export function describeMachine(m: MachineInfo): string {
  const growth = m.heapGrowth === null ? '' : `, old generation grows ${m.heapGrowth} %`;
  return `nproc ${m.nproc}, ${m.cpuModel}, ${m.totalMemoryGiB} GiB, Node ${m.node}, ${m.platform} ${m.arch}, GC ${m.gc}${growth}`;
}

/**
 * How busy the machine's CPUs are with work other than this process, sampled over `ms` before a
 * benchmark starts, in % of all CPUs. Shared machines are noisy; a busy one makes every
 * latency figure worse, so the report says so.
 */
export async function foreignCpuLoad(ms = 300): Promise<number> {
  const total = () => {
    let busy = 0;
    let all = 0;
    for (const c of os.cpus()) {
      const t = c.times;
      busy += t.user + t.nice + t.sys + t.irq;
      all += t.user + t.nice + t.sys + t.irq + t.idle;
    }
    return { busy, all };
  };
  const before = total();
  const own = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = total();
  const ownMs = (() => {
    const u = process.cpuUsage(own);
    return (u.user + u.system) / 1000;
  })();
  const all = after.all - before.all;
  if (all <= 0) return 0;
  return Math.max(0, Math.min(100, ((after.busy - before.busy - ownMs) / all) * 100));
}

/** The warning printed when {@link foreignCpuLoad} is high. */
export const BUSY_MACHINE_PERCENT = 10;
