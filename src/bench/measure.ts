import type { Histogram } from 'hdr-histogram-js';
import { formatBytes, formatCount, formatLatency, formatSkew } from './format.js';
import { BUSY_MACHINE_PERCENT, foreignCpuLoad } from './machine.js';
import { runMillrace } from './millrace-run.js';
import { runPostMessage } from './postmessage-run.js';
import type { BenchIO, IntervalHistogram, MeasuredRun, RunSettings, SystemName, SystemRun } from './types.js';

/** How each system is run: one function per system, the same settings for both. */
export const RUNNERS: Record<SystemName, (s: RunSettings) => Promise<MeasuredRun>> = {
  millrace: runMillrace,
  postmessage: runPostMessage,
};

/** A run with its foreign-load figure, and its histogram for files and plots. */
export interface Measured {
  run: SystemRun;
  histogram: Histogram;
  /** The engine's progress intervals, for latency over time (none for the baseline). */
  intervals?: IntervalHistogram[];
}

/** One run of the stateless scenario, with a look at how busy the machine was just before it. */
export function measureOnce(system: SystemName, io: BenchIO, settings: RunSettings): Promise<Measured> {
  return measureRun(io, () => RUNNERS[system](settings));
}

/** One run of any scenario, with a look at how busy the machine was just before it. */
export async function measureRun(io: BenchIO, runner: () => Promise<MeasuredRun>): Promise<Measured> {
  const foreignCpuPercent = Math.round(await foreignCpuLoad());
  if (foreignCpuPercent > BUSY_MACHINE_PERCENT) {
    io.err(`  warning: other processes use ${foreignCpuPercent} % of the CPUs; figures will be noisy\n`);
  }
  const m = await runner();
  const run: SystemRun = { ...m.run, foreignCpuPercent };
  io.err(`  ${describeRun(run)}\n`);
  return { run, histogram: m.histogram, ...(m.intervals === undefined ? {} : { intervals: m.intervals }) };
}

export function describeRun(r: SystemRun): string {
  const l = r.latency;
  const skew =
    r.clockSkewMs !== null
      ? `  clock skew ${formatSkew(r.clockSkewMs)}`
      : typeof r.clockSpreadMs === 'number'
        ? `  clock spread ${Math.round(r.clockSpreadMs * 1000)} µs`
        : '';
  const state =
    r.state === undefined
      ? ''
      : `  state ${formatCount(r.state.rows)} rows, ${formatBytes(r.state.memoryBytes)}`;
  const verdict = r.sustainable ? 'sustainable' : `NOT sustainable: ${r.reasons.join('; ')}`;
  return (
    `p50 ${formatLatency(l.p50)}  p99 ${formatLatency(l.p99)}  p99.9 ${formatLatency(l.p999)}  ` +
    `max ${formatLatency(l.max)}  ${l.count} rows${skew}${state}  ${verdict}`
  );
}
