import type { SystemAggregate } from './aggregate.js';
import type { CheckpointResult, CheckpointVariant } from './checkpoint.js';
import { CHECKPOINT_VARIANTS, variantLabel } from './checkpoint.js';
import type { RestartStats } from './checkpoint-restart.js';
import { type CheckpointRunStats, medianOf, type Spread } from './checkpoint-stats.js';
import { formatBytes, formatCount, formatLatency, formatRate, median, renderTable } from './format.js';
import { BUSY_MACHINE_PERCENT, describeMachine } from './machine.js';
import { displayPath, latencyCells, renderTargets } from './report.js';
import type { StateStats } from './types.js';

const seconds = (ms: number) => `${+(ms / 1000).toFixed(3)} s`;
const ms = (v: number | null | undefined) => (typeof v === 'number' ? formatLatency(v) : '–');
const count = (v: number | null | undefined) => (typeof v === 'number' ? formatCount(v) : '–');
const bytes = (v: number | null | undefined) => (typeof v === 'number' ? formatBytes(v) : '–');
const spreadMs = (s: Spread | null) => (s === null ? '–' : `${ms(s.p50)} / ${ms(s.p90)} / ${ms(s.max)}`);

/** The tables `millrace bench checkpoint` prints. */
export function renderCheckpointReport(r: CheckpointResult): string {
  const s = r.settings;
  const label = (v: CheckpointVariant) => variantLabel(v, s.intervalMs);
  let out = `millrace bench checkpoint: ${r.description}\n`;
  out += `machine: ${describeMachine(r.machine)}\n`;
  out +=
    `method: constant rate ${formatRate(s.rate)} rows/s, e2e latency = emit − scheduled time (no coordinated ` +
    `omission); the same query without a checkpoint, then with one; ${seconds(s.warmupMs)} warm-up excluded, ` +
    `${seconds(s.durationMs)} measured, ${s.runs} run${s.runs === 1 ? '' : 's'} of each` +
    `${s.runs > 1 ? ' (medians; p99 min–max)' : ''}\n\n`;

  const headers = ['run', 'p50', 'p90', 'p99', 'p99.9', 'p99.99', 'max', 'rows', 'backlog', 'sustainable'];
  if (s.runs > 1) headers.splice(4, 0, 'p99 min–max');
  const rows = CHECKPOINT_VARIANTS.map((v) => {
    const a = r.variants[v];
    const row = [label(v), ...latencyCells(a)];
    if (s.runs > 1) row.splice(4, 0, `${formatLatency(a.min.p99)}–${formatLatency(a.max.p99)}`);
    return row;
  });
  out += renderTable(
    headers,
    rows,
    headers.map((_, i) => (i === 0 ? 'left' : 'right')),
  );
  out += `p99 with the checkpoint / p99 without: ${r.p99Ratio.toFixed(2)}\n`;
  out += `CPU of the process over the window (every thread), per row recorded / cores busy: ${CHECKPOINT_VARIANTS.map(
    (v) =>
      `${label(v)} ${cpuCell(medianOf(r.cpuMicrosPerRow[v]), ' µs')} / ${cpuCell(medianOf(r.cpuCores[v]), '')}`,
  ).join('; ')}\n\n`;

  out += `state of the aggregation at the end of the window (${formatCount(s.keys)} cards)\n`;
  out += renderTable(
    ['run', 'groups held', 'most held', 'state memory (estimate)', 'groups evicted', 'late rows dropped'],
    CHECKPOINT_VARIANTS.map((v) => [label(v), ...stateCells(r.variants[v])]),
    ['left', 'right', 'right', 'right', 'right', 'right'],
  );
  out += '\n';
  out += renderCheckpoints(r.checkpoints);
  out += '\n';
  out += renderRestarts(r.restarts);
  out += '\n';

  const busy = Math.max(
    0,
    ...CHECKPOINT_VARIANTS.flatMap((v) => r.variants[v].runs.map((run) => run.foreignCpuPercent)),
  );
  if (busy > BUSY_MACHINE_PERCENT) {
    out += `warning: other processes used up to ${busy} % of the CPUs before some runs; the figures are noisy\n\n`;
  }
  out += renderTargets(r.targets, 'E3 and C1 are defined at 100 k rows/s, 1 M cards, a checkpoint every 1 s');
  if (r.files.length > 0) out += `files:\n${r.files.map((f) => `  ${displayPath(f)}\n`).join('')}`;
  return out;
}

function stateCells(a: SystemAggregate): string[] {
  const states = a.runs.map((run) => run.state).filter((st): st is StateStats => st !== undefined);
  const med = (f: (st: StateStats) => number) => (states.length > 0 ? median(states.map(f)) : null);
  return [
    count(med((st) => st.rows)),
    count(med((st) => st.maxRows)),
    bytes(med((st) => st.memoryBytes)),
    count(med((st) => st.removed)),
    count(med((st) => st.droppedLate)),
  ];
}

const cpuCell = (v: number | null, unit: string) => (v === null ? '–' : `${v.toFixed(2)}${unit}`);

const stopCell = (stopMs: number | null, error: string | null) =>
  `${ms(stopMs)}${error === null ? '' : ' (failed)'}`;

/** Says why a stop failed: a query that fell behind owes the rows due up to its stop's barrier. */
function stopWarning(errors: readonly (string | null)[]): string {
  const failed = errors.filter((e): e is string => e !== null);
  if (failed.length === 0) return '';
  return (
    `warning: ${failed.length === 1 ? 'a stop' : `${failed.length} stops`} failed (${failed[0]}): the query had fallen ` +
    'behind its source and owed the rows due up to the stop; its workers were terminated, and what it had not ' +
    'committed was not\n'
  );
}

/** Commits and state files of the checkpointed runs, one line per run. */
function renderCheckpoints(runs: readonly CheckpointRunStats[]): string {
  if (runs.length === 0) return '';
  let out = 'checkpoints in the measured window (p50 / p90 / max; times from the epoch’s barrier)\n';
  out += renderTable(
    [
      'run',
      'epochs committed',
      'commit after barrier',
      'longest gap',
      'snapshots',
      'snapshot size',
      'snapshot on disk after',
      'changelogs',
      'changelog size p50',
      'changelog on disk after',
      'state on disk',
      'stop took',
    ],
    runs.map((c, i) => [
      String(i + 1),
      String(c.epochsCommitted),
      spreadMs(c.commitLagMs),
      ms(c.maxCommitGapMs),
      String(c.snapshots.versions),
      bytes(c.snapshots.bytes?.p50),
      spreadMs(c.snapshots.writtenAfterMs),
      String(c.changelogs.versions),
      bytes(c.changelogs.bytes?.p50),
      spreadMs(c.changelogs.writtenAfterMs),
      bytes(c.stateBytes),
      stopCell(c.stopMs, c.stopError),
    ]),
    [
      'left',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
    ],
  );
  out += '(sizes and times of a state version: all partitions together, until the last one was on disk)\n';
  out += stopWarning(runs.map((c) => c.stopError));
  return out;
}

/** The restarts (C1), one line per run. */
function renderRestarts(restarts: readonly RestartStats[]): string {
  if (restarts.length === 0) return '';
  let out = 'restart on the checkpoint (times from the startQuery() call)\n';
  out += renderTable(
    [
      'run',
      'keys restored',
      'files read',
      'bytes read',
      'startQuery resolved',
      'first row',
      'first commit',
      'state loaded',
      'caught up',
      'down for',
      'backlog at 1st report',
      'groups at 1st report',
      'stop took',
    ],
    restarts.map((x, i) => [
      String(i + 1),
      count(x.restoredKeys),
      String(x.restoreFiles),
      bytes(x.restoreBytes),
      ms(x.startMs),
      ms(x.firstRowMs),
      ms(x.firstCommitMs),
      ms(x.stateLoadedMs),
      ms(x.caughtUpMs),
      ms(x.downtimeMs),
      count(x.backlogAtFirstReport),
      count(x.firstReportRows),
      stopCell(x.stopMs, x.stopError),
    ]),
    [
      'left',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
    ],
  );
  out += stopWarning(restarts.map((x) => x.stopError));
  if (restarts.length > 1) {
    out += `medians: startQuery ${ms(medianOf(restarts.map((x) => x.startMs)))}, first row ${ms(
      medianOf(restarts.map((x) => x.firstRowMs)),
    )}\n`;
  }
  out +=
    '(startQuery() resolves once every worker has read and checked its state files; a real-time restore ' +
    'then loads the state lazily, a key group when a row needs it and the rest in the background: "state ' +
    'loaded" is the first progress report (once a second) with every key group loaded; "caught up": the ' +
    'first progress report in which the source had read the rows due while the query was down)\n';
  return out;
}
