import { Counter, register as defaultRegistry, Gauge, Histogram, type Registry } from 'prom-client';
import { LATENCY_KINDS } from './latency.js';
import type { MeteredQuery } from './query-view.js';

/** Where a query's metrics go: `startQuery(job, { metrics: { registry } })`; `false` for none. */
export interface MetricsOptions {
  /** A prom-client registry (default: prom-client's default registry, the one `/metrics` handlers read). */
  registry?: Registry;
}

/** The states `millrace_query_status` has a series for. */
const STATES = ['active', 'restarting', 'stopping', 'terminated', 'failed'] as const;

/**
 * Latency percentiles as the `percentile` label says them, from the progress's keys. (Not
 * `quantile`: Prometheus keeps that label for summaries, whose quantiles it computes itself.)
 */
const PERCENTILES = [
  ['p50', '50'],
  ['p90', '90'],
  ['p99', '99'],
  ['p999', '99.9'],
  ['max', '100'],
] as const;

/** The metric families of one registry, shared by every query registered in it. */
class Families {
  readonly inputRows: Counter<'query'>;
  readonly sourceRows: Counter<'query' | 'source'>;
  readonly outputRows: Counter<'query'>;
  readonly latency: Gauge<'query' | 'kind' | 'percentile'>;
  readonly watermark: Gauge<'query'>;
  readonly watermarkLag: Gauge<'query'>;
  readonly stateRows: Gauge<'query' | 'operator'>;
  readonly stateBytes: Gauge<'query' | 'operator'>;
  readonly stateCommit: Counter<'query' | 'operator'>;
  readonly stateCheckpointBytes: Counter<'query' | 'operator'>;
  readonly commitDuration: Histogram<'query'>;
  readonly logBytes: Counter<'query'>;
  readonly committedEpoch: Gauge<'query'>;
  readonly lateRows: Counter<'query' | 'operator'>;
  readonly badRecords: Counter<'query' | 'outcome'>;
  readonly backpressure: Counter<'query'>;
  readonly progressLatency: Gauge<'query'>;
  readonly batch: Gauge<'query'>;
  readonly restarts: Counter<'query'>;
  readonly status: Gauge<'query' | 'state'>;
  readonly taskFill: Gauge<'query' | 'stage' | 'partition'>;
  readonly taskBackpressure: Counter<'query' | 'stage' | 'partition'>;
  /** The queries registered here, by their `query` label (a later one of the same name replaces). */
  readonly queries = new Map<string, MeteredQuery>();

  constructor(registry: Registry) {
    const registers = [registry];
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Counter<L>({ name, help, labelNames, registers });
    const gauge = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Gauge<L>({ name, help, labelNames, registers });
    this.inputRows = counter('millrace_input_rows_total', 'Rows the query read from its sources.', ['query']);
    this.sourceRows = counter('millrace_source_input_rows_total', 'Rows read, per source.', [
      'query',
      'source',
    ]);
    this.outputRows = counter('millrace_output_rows_total', 'Rows the query emitted to its sink.', ['query']);
    this.latency = gauge(
      'millrace_latency_seconds',
      'Latency percentiles of the last progress interval that emitted rows, from the merged HDR ' +
        'histograms of every task: e2e (sink emit minus source time), processing (sink emit minus ' +
        'source read), sourceQueuing (source read minus source time).',
      ['query', 'kind', 'percentile'],
    );
    this.watermark = gauge('millrace_watermark_seconds', 'The event-time watermark in force (Unix time).', [
      'query',
    ]);
    this.watermarkLag = gauge(
      'millrace_watermark_lag_seconds',
      "How far the watermark is behind the query's clock at the last progress report.",
      ['query'],
    );
    this.stateRows = gauge(
      'millrace_state_rows',
      'Rows (keys, windows, buffered rows) a stateful operator holds.',
      ['query', 'operator'],
    );
    this.stateBytes = gauge(
      'millrace_state_memory_bytes',
      "A stateful operator's state, estimated in bytes.",
      ['query', 'operator'],
    );
    this.stateCommit = counter(
      'millrace_state_commit_seconds_total',
      "Time spent writing a stateful operator's checkpoints, summed over its partitions.",
      ['query', 'operator'],
    );
    this.stateCheckpointBytes = counter(
      'millrace_state_checkpoint_written_bytes_total',
      "Bytes of a stateful operator's checkpoint files (snapshots and changelogs) written, summed over its partitions.",
      ['query', 'operator'],
    );
    this.commitDuration = new Histogram({
      name: 'millrace_checkpoint_commit_duration_seconds',
      help:
        'Per epoch, the time the driver took from the epoch being complete (every task reported, ' +
        'state durable) to its commit: offset log, sink commit, commit log.',
      labelNames: ['query'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.logBytes = counter(
      'millrace_checkpoint_log_written_bytes_total',
      "Bytes of the checkpoint's offset and commit log files the driver wrote.",
      ['query'],
    );
    this.committedEpoch = gauge('millrace_checkpoint_committed_epoch', 'The last epoch committed.', [
      'query',
    ]);
    this.lateRows = counter(
      'millrace_late_rows_total',
      'Rows a stateful operator dropped as late (behind its watermark).',
      ['query', 'operator'],
    );
    this.badRecords = counter(
      'millrace_bad_records_total',
      'Rows user code or decoding failed on, by what became of them (skipped, dead_lettered).',
      ['query', 'outcome'],
    );
    this.backpressure = counter(
      'millrace_backpressure_seconds_total',
      'Time tasks spent waiting for room in a full ring, summed over tasks.',
      ['query'],
    );
    this.progressLatency = gauge(
      'millrace_progress_report_seconds',
      "Time the driver took to collect the workers' reports for the last progress interval.",
      ['query'],
    );
    this.batch = gauge('millrace_batch_id', 'The epoch (micro-batch) the last progress report covers.', [
      'query',
    ]);
    this.restarts = counter(
      'millrace_restarts_total',
      'Times the query failed and restarted from its checkpoint.',
      ['query'],
    );
    const queries = this.queries;
    this.taskFill = new Gauge({
      name: 'millrace_task_input_fill_ratio',
      help: "How full a task's fullest input ring is at the scrape, 0 to 1 (1: its producers wait).",
      labelNames: ['query', 'stage', 'partition'],
      registers,
      // Read at each scrape from the rings' shared memory: no worker is asked.
      collect() {
        this.reset();
        for (const [query, q] of queries) {
          for (const t of q.taskGauges?.() ?? []) {
            this.set({ query, stage: String(t.stage), partition: String(t.partition) }, t.inputFill);
          }
        }
      },
    });
    this.taskBackpressure = counter(
      'millrace_task_backpressure_seconds_total',
      'Time a task waited for room in a full output ring.',
      ['query', 'stage', 'partition'],
    );
    this.status = gauge(
      'millrace_query_status',
      'The query state: 1 for the one it is in, 0 for the others.',
      ['query', 'state'],
    );
  }
}

const families = new WeakMap<Registry, Families>();

function familiesOf(registry: Registry): Families {
  let f = families.get(registry);
  if (f === undefined) {
    f = new Families(registry);
    families.set(registry, f);
  }
  return f;
}

/**
 * Registers a query's metrics (`millrace_*`, base units, labelled by query name, or id when it
 * has none) and keeps them up to date from its progress reports and status events: nothing runs
 * per row. The series stay after the query ends (a counter keeps its total), so a query started
 * again under the same name, say from its checkpoint, counts on from there; with `forgetAtEnd`
 * (a group's task) its gauges go when it ends.
 */
export function meterQuery(
  query: MeteredQuery,
  options: MetricsOptions = {},
  { forgetAtEnd = false }: { forgetAtEnd?: boolean } = {},
): void {
  const f = familiesOf(options.registry ?? defaultRegistry);
  const q = query.name ?? query.id;
  f.queries.set(q, query);
  /** The state operators this query reported: the label values of its per-operator gauges. */
  const operators = new Set<string>();
  // Takes the query's gauges out, and the query off the console's list; its counters stay, as
  // totals that stopped growing. A group's task does so where it stops: the process it moved to
  // reports it now, and two processes must not both say what state it is in.
  const forget = () => {
    if (f.queries.get(q) === query) f.queries.delete(q);
    for (const state of STATES) f.status.remove({ query: q, state });
    for (const kind of LATENCY_KINDS) {
      for (const [, percentile] of PERCENTILES) f.latency.remove({ query: q, kind, percentile });
    }
    for (const g of [f.watermark, f.watermarkLag, f.committedEpoch, f.progressLatency, f.batch]) {
      g.remove({ query: q });
    }
    for (const operator of operators) {
      f.stateRows.remove({ query: q, operator });
      f.stateBytes.remove({ query: q, operator });
    }
  };
  /** Each task's backpressure at the last report, to count on from (a restart starts from 0). */
  const lastBackpressure = new Map<string, number>();
  const setStatus = (state: string) => {
    for (const s of STATES) f.status.set({ query: q, state: s }, s === state ? 1 : 0);
  };
  setStatus(query.status.state);
  for (const outcome of ['skipped', 'dead_lettered']) f.badRecords.inc({ query: q, outcome }, 0);
  f.inputRows.inc({ query: q }, 0);
  f.outputRows.inc({ query: q }, 0);
  f.restarts.inc({ query: q }, 0);
  f.logBytes.inc({ query: q }, 0);
  query.on('epochCommitted', (epoch, commit) => {
    f.commitDuration.observe({ query: q }, commit.durationMs / 1000);
    f.logBytes.inc({ query: q }, commit.logBytes);
    f.committedEpoch.set({ query: q }, epoch);
  });
  query.on('restarting', () => {
    f.restarts.inc({ query: q });
    setStatus('restarting');
  });
  query.on('started', () => setStatus(query.status.state));
  query.on('terminated', () => {
    setStatus(query.status.state);
    if (forgetAtEnd) forget();
  });
  query.on('progress', (p) => {
    setStatus(query.status.state);
    f.inputRows.inc({ query: q }, p.numInputRows);
    for (const s of p.sources) f.sourceRows.inc({ query: q, source: s.description }, s.numInputRows);
    f.outputRows.inc({ query: q }, p.sink.numOutputRows);
    if (p.sink.numOutputRows > 0) {
      for (const kind of LATENCY_KINDS) {
        const quantiles = p.latencyMs[kind];
        for (const [key, percentile] of PERCENTILES)
          f.latency.set({ query: q, kind, percentile }, quantiles[key] / 1000);
      }
    }
    const watermark = p.eventTime.watermark;
    if (watermark !== undefined) {
      const w = Date.parse(watermark);
      f.watermark.set({ query: q }, w / 1000);
      f.watermarkLag.set({ query: q }, Math.max(0, Date.parse(p.timestamp) - w) / 1000);
    }
    for (const [i, s] of p.stateOperators.entries()) {
      const operator = `${i}:${s.operatorName}`;
      operators.add(operator);
      f.stateRows.set({ query: q, operator }, s.numRowsTotal);
      f.stateBytes.set({ query: q, operator }, s.memoryUsedBytes);
      f.stateCommit.inc({ query: q, operator }, s.commitTimeMs / 1000);
      f.stateCheckpointBytes.inc({ query: q, operator }, s.customMetrics.checkpointBytesWritten ?? 0);
      f.lateRows.inc({ query: q, operator }, s.numRowsDroppedByWatermark);
    }
    f.badRecords.inc({ query: q, outcome: 'skipped' }, p.badRecords.skipped);
    f.badRecords.inc({ query: q, outcome: 'dead_lettered' }, p.badRecords.deadLettered);
    f.backpressure.inc({ query: q }, p.durationMs.backpressure / 1000);
    for (const t of query.taskGauges?.() ?? []) {
      const stage = String(t.stage);
      const partition = String(t.partition);
      const key = `${stage}/${partition}`;
      const last = lastBackpressure.get(key) ?? 0;
      const delta = t.backpressureMs >= last ? t.backpressureMs - last : t.backpressureMs;
      lastBackpressure.set(key, t.backpressureMs);
      f.taskBackpressure.inc({ query: q, stage, partition }, delta / 1000);
    }
    f.progressLatency.set({ query: q }, p.durationMs.reportLatency / 1000);
    f.batch.set({ query: q }, p.batchId);
  });
}

/** The queries whose metrics are registered in a registry (what the console served with it shows). */
export function meteredQueries(registry: Registry = defaultRegistry): MeteredQuery[] {
  return [...(families.get(registry)?.queries.values() ?? [])];
}
