import { SKEW_WARNING_MS } from './aggregate.js';
import { formatBytes, formatCount, formatRate, median, renderTable } from './format.js';
import type { FraudResult } from './fraud.js';
import type { KafkaLoopResult } from './kafka-loop.js';
import type { MillraceScenarioResult } from './millrace-scenario.js';
import { renderFindMax, renderFooter, renderHeader, renderLatencyTable } from './report.js';
import type { RateResult } from './scenario.js';
import type { StreamStaticJoinResult } from './stream-static-join.js';
import type { CommonOptions, StateStats } from './types.js';
import type { WindowedCountResult } from './windowed-count.js';

/** How a Millrace-only scenario's report names what it shows. */
export interface MillraceReportStyle {
  /**
   * The stateful operator: what it is (`the aggregation (100 000 cards)`) and what its state rows
   * are (`groups`). Absent for a stateless query: no state table.
   */
  state?: { operator: string; rows: string };
  /** Why the targets may not have been evaluated (`E2 is defined at 100 k rows/s`). */
  noTargets: string;
}

/** The tables a Millrace-only scenario prints: latency, the state held, --find-max, targets. */
export function renderMillraceReport(
  r: MillraceScenarioResult<string, CommonOptions>,
  style: MillraceReportStyle,
): string {
  let out = renderHeader(r.scenario, r.description, r.machine, r.settings);
  out += `baseline: ${r.baseline}\n\n`;
  if (r.rates.length > 0) {
    out += renderLatencyTable(r.rates, r.settings.runs);
    if (style.state !== undefined) out += renderState(r.rates, r.settings.runs, style.state);
    out += renderClockSpread(r.rates);
    out += '\n';
  }
  if (r.findMax !== null) out += `${renderFindMax(r.findMax)}\n`;
  return out + renderFooter(r.rates, r.findMax, r.targets, r.files, style.noTargets);
}

/** The stateful operator's state at the end of each rate's window (stateOperators[0]). */
function renderState(
  rates: readonly RateResult[],
  runs: number,
  state: NonNullable<MillraceReportStyle['state']>,
): string {
  const out = `\nstate of ${state.operator} at the end of the window${runs > 1 ? ' (medians of the runs)' : ''}\n`;
  const rows = rates.map((rate) => {
    const states = (rate.systems.millrace?.runs ?? [])
      .map((run) => run.state)
      .filter((st): st is StateStats => st !== undefined);
    const cell = (f: (st: StateStats) => number, format: (v: number) => string) =>
      states.length > 0 ? format(median(states.map(f))) : '–';
    return [
      formatRate(rate.rate),
      cell((st) => st.rows, formatCount),
      cell((st) => st.maxRows, formatCount),
      cell((st) => st.memoryBytes, formatBytes),
      cell((st) => st.removed, formatCount),
      cell((st) => st.droppedLate, formatCount),
    ];
  });
  return (
    out +
    renderTable(
      [
        'rate/s',
        `${state.rows} held`,
        'most held',
        'state memory (estimate)',
        `${state.rows} removed`,
        'late rows dropped',
      ],
      rows,
      ['right', 'right', 'right', 'right', 'right', 'right'],
    )
  );
}

/** How far apart the latency clocks of the query's threads were (see clock-probe.ts). */
function renderClockSpread(rates: readonly RateResult[]): string {
  let out = '';
  for (const rate of rates) {
    const spreads = (rate.systems.millrace?.runs ?? [])
      .map((run) => run.clockSpreadMs)
      .filter((v): v is number => typeof v === 'number');
    if (spreads.length === 0) continue;
    const worst = Math.max(...spreads);
    out += `Millrace at ${formatRate(rate.rate)}: latency clocks of the worker threads within ${Math.round(worst * 1000)} µs of each other`;
    if (worst > SKEW_WARNING_MS) {
      out += ' (warning: an e2e figure of a row that changed threads can be off by that much)';
    }
    out += '\n';
  }
  return out;
}

/** The tables `millrace bench windowed-count` prints. */
export function renderWindowedCountReport(r: WindowedCountResult): string {
  return renderMillraceReport(r, {
    state: { operator: `the aggregation (${formatCount(r.settings.keys)} cards)`, rows: 'groups' },
    noTargets: 'E2 is defined at 100 k rows/s, T2 needs --find-max',
  });
}

/** The tables `millrace bench fraud` prints. */
export function renderFraudReport(r: FraudResult): string {
  return renderMillraceReport(r, {
    state: {
      operator: 'the fraud detector (a row per card and state variable, and per card with timers)',
      rows: 'state rows',
    },
    noTargets: 'E4 is defined at 50 k rows/s',
  });
}

/** The tables `millrace bench stream-static-join` prints. */
export function renderStreamStaticJoinReport(r: StreamStaticJoinResult): string {
  return renderMillraceReport(r, {
    noTargets: 'no target id is set for a stream–static join; see the baseline line for the anchor',
  });
}

/** The tables `millrace bench stateless|windowed-count --kafka` print. */
export function renderKafkaLoopReport(r: KafkaLoopResult): string {
  return renderMillraceReport(r, {
    ...(r.scenario === 'windowed-count-kafka'
      ? { state: { operator: `the aggregation (${formatCount(r.settings.keys)} cards)`, rows: 'groups' } }
      : {}),
    noTargets: 'K1 and K2 are defined at 10 k rows/s',
  });
}
