import { randomUUID } from 'node:crypto';
import { readGroupRecord } from '../../checkpoint/group-record.js';
import type { LeaseTiming } from '../../checkpoint/lease.js';
import { CheckpointManager, type RecoveryPoint } from '../../checkpoint/manager.js';
import { checkSinkCapabilities } from '../../connectors/checks.js';
import { type ResolvedLayouts, withLayouts } from '../../connectors/layouts.js';
import { resolveLayouts } from '../../connectors/resolve.js';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import type { MetricsOptions } from '../../metrics/prometheus.js';
import { checkAsyncProgressTracking, checkSinkMode, checkSourceEvolution } from '../../plan/analyze.js';
import { planFingerprint } from '../../plan/fingerprint.js';
import { keepsWholeRows, planPhysical } from '../../plan/physical.js';
import type { QueryOptionsInput } from '../../plan/query-options.js';
import { resolveQueryOptions } from '../../plan/query-options.js';
import { checkSideOutputPolicies } from '../../plan/side-output-target.js';
import type { PlanCut } from '../group/cut-plan.js';
import { importJob, type JobLocation, jobUrlOf, planJob } from '../job-loader.js';
import { type Clock, ManualClock, SystemClock } from '../time/clock.js';
import { measureWallOffset } from '../time/precise-time.js';
import { type RuntimeConfig, resolveWorkers } from './runtime-config.js';
import { withSourceStarts } from './source-starts.js';
import { StreamingQuery } from './streaming-query.js';

export interface StartOptions {
  /** Job parameters (`job.param(name)`); numbers and booleans are passed as strings. */
  params?: Record<string, string | number | boolean>;
  /** `'system'` (default) or `'manual'`: time moves only when the test moves `q.clock`. */
  clock?: 'system' | 'manual';
  /** Start time of a manual clock (ms since the epoch, default 0). */
  clockStart?: number;
  /** Overrides the job's query name. */
  queryName?: string;
  /** Overrides the job's query options. */
  options?: QueryOptionsInput;
  /** Where the console sink writes (default: process.stdout / process.stderr). */
  console?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** How long workers may take to load the job (default 60 s). */
  startTimeoutMs?: number;
  /**
   * Rows already in memory sources when the query starts (what `Trigger.availableNow()` and
   * `Trigger.once()` find): by source name, a list of rows for partition 0, or
   * `{ [partition]: rows }`.
   */
  initialData?: Record<string, unknown[] | Record<number, unknown[]>>;
  /**
   * Where the query keeps its checkpoint; overrides the job's `checkpointLocation`. An existing
   * checkpoint is resumed (docs/operations.md, "Restart").
   */
  checkpointLocation?: string;
  /**
   * How long the checkpoint's lock lasts without renewal (`periodMs`, default 10 s) and how often
   * the run renews it (`renewMs`, default 3 s); see docs/operations.md, "One run per checkpoint".
   */
  checkpointLease?: LeaseTiming;
  /**
   * A stopped run of the same query that this one continues, for tests: its memory sources' logs
   * become this run's (rows it committed are not sent again) and its memory sink's committed
   * epochs stay in this run's sink, as if source and sink had outlived the query.
   */
  continueFrom?: StreamingQuery;
  /**
   * Where the query's Prometheus metrics are registered (docs/operations.md, "Monitoring"):
   * `{ registry }` for a prom-client registry of your own; by default prom-client's default
   * registry; `false` for none.
   */
  metrics?: MetricsOptions | false;
}

const defaultConsole = (line: string, stream: 'stdout' | 'stderr') => {
  (stream === 'stderr' ? process.stderr : process.stdout).write(`${line}\n`);
};

/**
 * What a query started as one task of a group run is told besides its options
 * (docs/scale-out.md): the task, the group's query id, and the source layouts restricted to the
 * task's partitions.
 */
export interface TaskScope {
  readonly task: string;
  readonly queryId: string;
  readonly layouts: ResolvedLayouts;
  /** The half of the job's plan the task runs, when the plan is cut (a keyed operator). */
  readonly cut: PlanCut | null;
}

/**
 * Starts a query from a job module: the whole query, or (`scope`) one task of a group run.
 * Everything checkable is checked before any thread starts (plan-time errors reject with their
 * code); the promise resolves once every worker runs.
 */
export async function launchQuery(
  job: JobLocation,
  options: StartOptions = {},
  scope: TaskScope | null = null,
): Promise<StreamingQuery> {
  const jobUrl = jobUrlOf(job);
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.params ?? {})) params[k] = String(v);
  const module = await importJob(jobUrl);
  const cut = scope?.cut ?? null;
  let plan = planJob(module, params, jobUrl, cut);
  // Sources that learn their partitions from outside (a subscription's topics) resolve them; the
  // job is built again with them, here and in every worker.
  const layouts = scope?.layouts ?? (await resolveLayouts(plan.sources));
  if (Object.keys(layouts).length > 0)
    plan = withLayouts(layouts, () => planJob(module, params, jobUrl, cut));
  checkSinkMode(plan);
  const definition = plan.definition;
  const queryOptions = options.options
    ? resolveQueryOptions(definition.options, options.options)
    : definition.options;
  checkSourceEvolution(plan, queryOptions);
  checkAsyncProgressTracking(plan, queryOptions);
  checkSideOutputPolicies(queryOptions);
  const { sink, trigger } = plan.definition;
  checkSinkCapabilities(
    sink,
    trigger.kind === 'realTime' ? trigger.checkpointIntervalMs : null,
    queryOptions,
  );
  const defaultShufflePartitions = queryOptions.shufflePartitions ?? resolveWorkers(queryOptions);
  const physical = planPhysical(plan, { defaultShufflePartitions, wholeRows: keepsWholeRows(queryOptions) });
  const wallOffset = measureWallOffset();
  let clock: Clock;
  if (options.clock === 'manual') clock = new ManualClock(undefined, options.clockStart ?? 0);
  else if (options.clock === undefined || options.clock === 'system') clock = new SystemClock(wallOffset);
  else throw invalidArgument(`clock must be 'system' or 'manual', got ${JSON.stringify(options.clock)}`);
  if (options.continueFrom?.isActive) {
    throw invalidArgument('continueFrom: that query is still running; stop it first');
  }
  const runId = randomUUID();
  const location = options.checkpointLocation ?? definition.checkpointLocation;
  if (queryOptions.restartPolicy !== null && location === undefined) {
    throw invalidArgument(
      'restartPolicy (millrace run --restart) restarts a failed query from its checkpoint, and this query has ' +
        'none: give it a checkpoint location (--checkpoint dir, or checkpointLocation in the job or startQuery)',
    );
  }
  // Every attempt of the query opens the checkpoint the same way (a restart is a new run).
  const openCheckpoint = (at: string, run: string) =>
    CheckpointManager.open(at, plan, run, scope?.queryId ?? randomUUID(), {
      sourceEvolution: queryOptions.sourceEvolution,
      physical,
      lease: options.checkpointLease,
      task: scope?.task ?? null,
    });
  let checkpoint: CheckpointManager | null = null;
  let recovery: RecoveryPoint | null = null;
  if (location !== undefined && scope === null && (await readGroupRecord(location)) !== undefined) {
    throw new MillraceError(
      ErrorCode.CHECKPOINT_INCOMPATIBLE_CHANGE,
      `the checkpoint at ${location} is a group's (its tasks are run by \`millrace run --group\` processes, ` +
        'docs/scale-out.md): run this job with its group, or give it another checkpoint location',
    );
  }
  if (location !== undefined) ({ manager: checkpoint, recovery } = await openCheckpoint(location, runId));
  try {
    const queryId = recovery?.queryId ?? scope?.queryId ?? randomUUID();
    recovery = await withSourceStarts(plan, checkpoint, recovery, queryId);
    const config: RuntimeConfig = {
      queryId,
      task: scope?.task ?? null,
      runId,
      name: options.queryName ?? definition.queryName ?? null,
      jobUrl,
      params,
      plan,
      physical,
      fingerprint: planFingerprint(plan, true),
      options: queryOptions,
      defaultShufflePartitions,
      clock,
      wallOffset,
      checkpoint,
      recovery,
      layouts,
      cut,
    };
    const openAttempt = async (): Promise<RuntimeConfig> => {
      const next = randomUUID();
      const opened = await openCheckpoint(location!, next);
      try {
        const resumed = await withSourceStarts(plan, opened.manager, opened.recovery, config.queryId);
        return { ...config, runId: next, checkpoint: opened.manager, recovery: resumed };
      } catch (e) {
        await opened.manager.close();
        throw e;
      }
    };
    // Loaded here, not with the module: the worker threads import the job, and with it the public
    // API, but never meter a query, and prom-client costs each of them its load time. Before the
    // launch: nothing may come between it and the caller's continuation, which hears 'started'.
    const metering = options.metrics === false ? null : await import('../../metrics/prometheus.js');
    const q = new StreamingQuery(config, { console: options.console ?? defaultConsole, openAttempt });
    await q.launch(options.startTimeoutMs ?? 60_000, options.initialData ?? {}, options.continueFrom);
    // A group's task may move to another process, which reports it from then on.
    metering?.meterQuery(q, options.metrics || undefined, { forgetAtEnd: scope !== null });
    return q;
  } catch (e) {
    // A query that did not start releases its checkpoint (launch failures already did).
    await checkpoint?.close();
    throw e;
  }
}
