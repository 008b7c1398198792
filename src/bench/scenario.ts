import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { aggregate, type SystemAggregate } from './aggregate.js';
import { formatLatency, formatRate } from './format.js';
import { intervalLog, renderLatencyOverTime } from './latency-over-time.js';
import { percentileCurve, renderLatencyPlot } from './latency-plot.js';
import { describeMachine, type MachineInfo } from './machine.js';
import type { Measured } from './measure.js';
import { type BenchIO, SYSTEM_LABEL, type SystemName } from './types.js';

/**
 * What the latency scenarios share: every rate for every system (`runs` times, the systems' order
 * alternating between runs), an HDR file per run, medians per rate and system, a plot per rate,
 * and the result as JSON.
 */

export interface RateResult {
  rate: number;
  systems: Partial<Record<SystemName, SystemAggregate>>;
}

export interface RatesPlan {
  /** The scenario's name: the prefix of its files and progress lines. */
  scenario: string;
  rates: readonly number[];
  runs: number;
  systems: readonly SystemName[];
  outDir: string;
  /** Runs one system once at a rate. */
  measure(system: SystemName, rate: number): Promise<Measured>;
  /** Title of the plot at a rate. */
  plotTitle(rate: number): string;
  /** Its subtitle (method and machine). */
  plotSubtitle: string;
}

export interface RatesOutcome {
  rates: RateResult[];
  /** Every run of every rate, by system, in the order they ran. */
  measured: Map<number, Partial<Record<SystemName, Measured[]>>>;
  files: string[];
}

/** Creates the output directory and returns its absolute path. */
export async function prepareOut(outDir: string): Promise<string> {
  const dir = resolve(outDir);
  await mkdir(dir, { recursive: true });
  return dir;
}

export async function measureRates(plan: RatesPlan, io: BenchIO): Promise<RatesOutcome> {
  const outDir = await prepareOut(plan.outDir);
  const files: string[] = [];
  const rates: RateResult[] = [];
  const all = new Map<number, Partial<Record<SystemName, Measured[]>>>();
  for (const rate of plan.rates) {
    const measured: Partial<Record<SystemName, Measured[]>> = {};
    for (let r = 0; r < plan.runs; r++) {
      const order = r % 2 === 0 ? plan.systems : [...plan.systems].reverse();
      for (const system of order) {
        io.err(
          `${plan.scenario}: ${SYSTEM_LABEL[system]} at ${formatRate(rate)} rows/s, run ${r + 1} of ${plan.runs}\n`,
        );
        const m = await plan.measure(system, rate);
        (measured[system] ??= []).push(m);
        const file = join(outDir, `${plan.scenario}-${rate}-${system}-run${r + 1}.hgrm`);
        // Recorded in µs; the file is in ms, as HdrHistogram's plotters expect.
        await writeFile(file, m.histogram.outputPercentileDistribution(5, 1000));
        files.push(file);
        if (m.intervals !== undefined && m.intervals.length > 0) {
          // Latency over time, so that a stall can be placed in the run.
          const base = join(outDir, `${plan.scenario}-${rate}-${system}-run${r + 1}`);
          const what = `${plan.scenario}, ${SYSTEM_LABEL[system]} at ${formatRate(rate)} rows/s, run ${r + 1}`;
          await writeFile(`${base}.hlog`, intervalLog(m.intervals, what));
          await writeFile(
            `${base}-over-time.svg`,
            renderLatencyOverTime(what, plan.plotSubtitle, m.intervals),
          );
          files.push(`${base}.hlog`, `${base}-over-time.svg`);
        }
      }
    }
    const systems: Partial<Record<SystemName, SystemAggregate>> = {};
    for (const system of plan.systems) systems[system] = aggregate(measured[system]!.map((m) => m.run));
    rates.push({ rate, systems });
    all.set(rate, measured);
    const plot = join(outDir, `${plan.scenario}-${rate}.svg`);
    await writeFile(plot, plotRate(plan.plotTitle(rate), plan.plotSubtitle, plan.systems, measured));
    files.push(plot);
  }
  return { rates, measured: all, files };
}

const COLORS: Record<SystemName, string> = { millrace: '#1f6fd1', postmessage: '#d1491f' };

/** Latency by percentile at one rate: one line per system, all its runs merged. */
function plotRate(
  title: string,
  subtitle: string,
  systems: readonly SystemName[],
  measured: Partial<Record<SystemName, Measured[]>>,
): string {
  const series = systems.map((system) => {
    // All runs at this rate merged into one distribution (a fresh histogram: it resizes to fit).
    const merged = hdr.build({ lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 });
    for (const m of measured[system] ?? []) merged.add(m.histogram);
    const p99 = formatLatency(merged.getValueAtPercentile(99) / 1000);
    return {
      name: `${SYSTEM_LABEL[system]} (p99 ${p99})`,
      color: COLORS[system],
      points: percentileCurve(merged),
    };
  });
  return renderLatencyPlot(title, subtitle, series);
}

/** The plot's subtitle: runs, window, warm-up, machine. */
export function plotSubtitle(
  runs: number,
  durationMs: number,
  warmupMs: number,
  machine: MachineInfo,
): string {
  return `${runs} × ${durationMs / 1000} s measured after ${warmupMs / 1000} s warm-up; ${describeMachine(machine)}`;
}

/**
 * Writes `<scenario>.json` (the result, its own path among the files), adds it to `files` and
 * says the scenario is done.
 */
export async function writeResult<R extends { files: string[]; machine: MachineInfo }>(
  scenario: string,
  outDir: string,
  result: R,
  io: BenchIO,
): Promise<R> {
  const json = join(resolve(outDir), `${scenario}.json`);
  await writeFile(json, `${JSON.stringify({ ...result, files: [...result.files, json] }, null, 2)}\n`);
  result.files.push(json);
  io.err(`${scenario}: done on ${describeMachine(result.machine)}\n`);
  return result;
}
