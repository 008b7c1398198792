import type { Histogram } from 'hdr-histogram-js';
import type { CliIO } from '../io.js';
import { formatLatency, formatSkew } from './format.js';
import { BUSY_MACHINE_PERCENT, foreignCpuLoad } from './machine.js';
import { runMillrace } from './millrace-run.js';
import { runPostMessage } from './postmessage-run.js';
import type { MeasuredRun, RunSettings, SystemName, SystemRun } from './types.js';

/** How each system is run: one function per system, the same settings for both. */
export const RUNNERS: Record<SystemName, (s: RunSettings) => Promise<MeasuredRun>> = {
  millrace: runMillrace,
  postmessage: runPostMessage,
};

/** A run with its foreign-load figure, and its histogram for files and plots. */
export interface Measured {
  run: SystemRun;
  histogram: Histogram;
}

/** One run, with a look at how busy the machine was just before it. */
export async function measureOnce(system: SystemName, io: CliIO, settings: RunSettings): Promise<Measured> {
  const foreignCpuPercent = Math.round(await foreignCpuLoad());
  if (foreignCpuPercent > BUSY_MACHINE_PERCENT) {
    io.err(`  warning: other processes use ${foreignCpuPercent} % of the CPUs; figures will be noisy\n`);
  }
  const m = await RUNNERS[system](settings);
  const run: SystemRun = { ...m.run, foreignCpuPercent };
  io.err(`  ${describeRun(run)}\n`);
  return { run, histogram: m.histogram };
}

export function describeRun(r: SystemRun): string {
  const l = r.latency;
  const skew = r.clockSkewMs === null ? '' : `  clock skew ${formatSkew(r.clockSkewMs)}`;
  const verdict = r.sustainable ? 'sustainable' : `NOT sustainable: ${r.reasons.join('; ')}`;
  return (
    `p50 ${formatLatency(l.p50)}  p99 ${formatLatency(l.p99)}  p99.9 ${formatLatency(l.p999)}  ` +
    `max ${formatLatency(l.max)}  ${l.count} rows${skew}  ${verdict}`
  );
}
