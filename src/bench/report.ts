import { relative } from 'node:path';
import { SKEW_WARNING_MS, type SystemAggregate } from './aggregate.js';
import type { FindMaxResult } from './find-max.js';
import { formatCount, formatLatency, formatRate, formatSkew, median, renderTable } from './format.js';
import type { IdleResult } from './idle.js';
import { BUSY_MACHINE_PERCENT, describeMachine, type MachineInfo } from './machine.js';
import type { RateResult } from './scenario.js';
import type { StatelessResult } from './stateless.js';
import { formatValue, type TargetCheck } from './targets.js';
import { SYSTEM_LABEL, SYSTEMS, type SystemName } from './types.js';

/** A path relative to the working directory when it is below it. */
export function displayPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel.startsWith('..') ? path : rel;
}

const seconds = (ms: number) => `${+(ms / 1000).toFixed(3)} s`;

/** The first lines of a latency scenario's report: what ran, where, and how it was measured. */
export function renderHeader(
  scenario: string,
  description: string,
  machine: MachineInfo,
  s: { warmupMs: number; durationMs: number; runs: number },
): string {
  let out = `millrace bench ${scenario}: ${description}\n`;
  out += `machine: ${describeMachine(machine)}\n`;
  out +=
    `method: constant rate, e2e latency = emit − scheduled time (no coordinated omission); ` +
    `${seconds(s.warmupMs)} warm-up excluded, ${seconds(s.durationMs)} measured, ` +
    `${s.runs} run${s.runs === 1 ? '' : 's'} per rate${s.runs > 1 ? ' (medians; p99 min–max)' : ''}\n`;
  return out;
}

/** One system's medians as table cells: p50 … max, rows, backlog at the end, sustainable. */
export function latencyCells(a: SystemAggregate): string[] {
  const m = a.median;
  return [
    formatLatency(m.p50),
    formatLatency(m.p90),
    formatLatency(m.p99),
    formatLatency(m.p999),
    formatLatency(m.p9999),
    formatLatency(m.max),
    formatCount(m.count),
    a.finalBacklog === null ? '–' : formatCount(a.finalBacklog),
    a.sustainable ? 'yes' : 'no',
  ];
}

/** Latency percentiles, backlog and verdict: one line per rate and system. */
export function renderLatencyTable(rates: readonly RateResult[], runs: number): string {
  const headers = [
    'rate/s',
    'system',
    'p50',
    'p90',
    'p99',
    'p99.9',
    'p99.99',
    'max',
    'rows',
    'backlog',
    'sustainable',
  ];
  if (runs > 1) headers.splice(5, 0, 'p99 min–max');
  const rows: string[][] = [];
  for (const rate of rates) {
    for (const system of SYSTEMS) {
      const a = rate.systems[system];
      if (a === undefined) continue;
      const row = [formatRate(rate.rate), SYSTEM_LABEL[system], ...latencyCells(a)];
      if (runs > 1) row.splice(5, 0, `${formatLatency(a.min.p99)}–${formatLatency(a.max.p99)}`);
      rows.push(row);
    }
  }
  return renderTable(
    headers,
    rows,
    headers.map((_, i) => (i === 1 ? 'left' : 'right')),
  );
}

/** The probes of a --find-max search: `50 k✓ 100 k✗(2) 75 k✓`; (2): a second attempt ran. */
export function probeList(f: FindMaxResult): string {
  return f.tried
    .map((t) => `${formatRate(t.rate)}${t.sustainable ? '✓' : '✗'}${t.attempts > 1 ? `(${t.attempts})` : ''}`)
    .join(' ');
}

/** The --find-max block: highest rate sustained, lowest not, and every probe. */
export function renderFindMax(findMax: Partial<Record<SystemName, FindMaxResult>>): string {
  let out = 'highest sustainable rate (backlog bounded, p99 < 10 ms)\n';
  const rows: string[][] = [];
  for (const system of SYSTEMS) {
    const f = findMax[system];
    if (f === undefined) continue;
    const tried = probeList(f);
    rows.push([
      SYSTEM_LABEL[system],
      f.best > 0 ? `${formatRate(f.best)} rows/s` : 'none',
      f.worst === null ? '–' : `${formatRate(f.worst)} rows/s`,
      tried,
    ]);
  }
  out += renderTable(['system', 'sustained', 'not sustained', 'probes'], rows, [
    'left',
    'right',
    'right',
    'left',
  ]);
  const m = findMax.millrace?.best;
  const b = findMax.postmessage?.best;
  if (m && b) out += `Millrace sustains ${(m / b).toFixed(2)} × the rate of the postMessage pipeline\n`;
  const f = Object.values(findMax)[0];
  if (f)
    out += `(probes: ${seconds(f.warmupMs)} warm-up, ${seconds(f.durationMs)} measured; (2): passed or failed on a second try)\n`;
  return out;
}

/** The warning about other processes, the targets and the files: the end of every latency report. */
export function renderFooter(
  rates: readonly RateResult[],
  findMax: Partial<Record<SystemName, FindMaxResult>> | null,
  targets: readonly TargetCheck[],
  files: readonly string[],
  noTargets: string,
): string {
  let out = '';
  const busy = maxForeignLoad(rates, findMax);
  if (busy > BUSY_MACHINE_PERCENT) {
    out += `warning: other processes used up to ${busy} % of the CPUs before some runs; the figures are noisy\n\n`;
  }
  out += renderTargets(targets, noTargets);
  if (files.length > 0) {
    out += `files:\n${files.map((f) => `  ${displayPath(f)}\n`).join('')}`;
  }
  return out;
}

/** The tables `millrace bench stateless` prints. */
export function renderStatelessReport(r: StatelessResult): string {
  let out = `${renderHeader('stateless', r.description, r.machine, r.settings)}\n`;
  if (r.rates.length > 0) out += `${renderLatencyTable(r.rates, r.settings.runs)}${renderSkew(r)}\n`;
  if (r.findMax !== null) out += `${renderFindMax(r.findMax)}\n`;
  return (
    out +
    renderFooter(r.rates, r.findMax, r.targets, r.files, 'E1 is defined at 100 k rows/s, T1 needs --find-max')
  );
}

/** The clock skew Millrace's latency figures carry (see clock-probe.ts), and the figures without it. */
function renderSkew(r: StatelessResult): string {
  let out = '';
  let warn = false;
  for (const rate of r.rates) {
    const a = rate.systems.millrace;
    if (!a || a.clockSkewMs === null) continue;
    out += `Millrace at ${formatRate(rate.rate)}: latency clock of the sink thread − the source thread ${formatSkew(a.clockSkewMs)}`;
    if (Math.abs(a.clockSkewMs) > SKEW_WARNING_MS && a.corrected) {
      warn = true;
      const c = a.corrected;
      out +=
        `; without it: p50 ${formatLatency(c.p50)}, p90 ${formatLatency(c.p90)}, p99 ${formatLatency(c.p99)}, ` +
        `p99.9 ${formatLatency(c.p999)}, max ${formatLatency(c.max)}`;
    }
    out += '\n';
  }
  if (warn) {
    out +=
      "warning: the engine's e2e figures above include the skew: each thread measures its clock offset once, " +
      'with an error (src/runtime/time/precise-time.ts); the figures "without it" subtract the measured skew\n';
  }
  return out;
}

function maxForeignLoad(
  rates: readonly RateResult[],
  findMax: Partial<Record<SystemName, FindMaxResult>> | null,
): number {
  let max = 0;
  for (const rate of rates) {
    for (const a of Object.values(rate.systems))
      for (const run of a.runs) max = Math.max(max, run.foreignCpuPercent);
  }
  for (const f of Object.values(findMax ?? {}))
    for (const t of f.tried) max = Math.max(max, t.foreignCpuPercent);
  return max;
}

/** The targets block: measured, target, ratio, PASS/MISS. */
export function renderTargets(targets: readonly TargetCheck[], noTargets?: string): string {
  if (targets.length === 0) return `targets: none evaluated here${noTargets ? ` (${noTargets})` : ''}\n`;
  const rows = targets.map((t) => [
    t.id,
    t.what,
    formatValue(t.measured, t.unit),
    `${t.comparison === '<=' ? '≤' : '≥'} ${formatValue(t.target, t.unit)}`,
    t.ratio.toFixed(2),
    t.pass ? 'PASS' : 'MISS',
  ]);
  const notes = targets.some((t) => t.note !== undefined);
  if (notes) {
    for (let i = 0; i < targets.length; i++) rows[i]!.push(targets[i]!.note ?? '');
  }
  return `targets (docs/benchmarks.md)\n${renderTable(
    ['id', 'what', 'measured', 'target', 'measured/target', 'result', ...(notes ? ['note'] : [])],
    rows,
    ['left', 'left', 'right', 'right', 'right', 'left', 'left'],
  )}`;
}

/** What `millrace bench idle` prints. */
export function renderIdleReport(r: IdleResult): string {
  let out = `millrace bench idle: ${r.description}\n`;
  out += `machine: ${describeMachine(r.machine)}\n`;
  out +=
    `method: process CPU time (process.cpuUsage(), every thread) over ${seconds(r.windowMs)}, ` +
    `after ${seconds(r.warmupMs)} of start-up\n\n`;
  out += renderTable(
    ['CPU time', 'user', 'system', 'of one core', 'per second: median', 'max', 'progress reports'],
    [
      [
        `${(r.cpuUserMs + r.cpuSystemMs).toFixed(1)} ms`,
        `${r.cpuUserMs.toFixed(1)} ms`,
        `${r.cpuSystemMs.toFixed(1)} ms`,
        `${r.cpuPercent.toFixed(2)} %`,
        r.perSecondMs.length > 0 ? `${median(r.perSecondMs).toFixed(1)} ms` : '–',
        r.perSecondMs.length > 0 ? `${Math.max(...r.perSecondMs).toFixed(1)} ms` : '–',
        String(r.progressReports),
      ],
    ],
    ['right', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
  if (r.foreignCpuPercent > BUSY_MACHINE_PERCENT) {
    out += `\nwarning: other processes used ${r.foreignCpuPercent} % of the CPUs before the run\n`;
  }
  out += `\n${renderTargets(r.targets)}`;
  return out;
}
