import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { groupRecord } from '../../checkpoint/group-record.js';
import type { GroupShare, GroupShareMembership } from '../../connectors/contract.js';
import { withLayouts } from '../../connectors/layouts.js';
import { sinkConnector, sourceConnector } from '../../connectors/registry.js';
import { resolveLayouts } from '../../connectors/resolve.js';
import type { SourceSpec } from '../../connectors/spec.js';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import type { StreamingQueryProgress } from '../../metrics/progress.js';
import type { AnalyzedPlan } from '../../plan/analyze.js';
import { type Duration, parseDuration } from '../../util/duration.js';
import { launchQuery, type StartOptions } from '../driver/launch-query.js';
import type { StreamingQuery } from '../driver/streaming-query.js';
import { importJob, type JobLocation, jobUrlOf, planJob } from '../job-loader.js';
import { findCut, repartitionTopic } from './cut-plan.js';

/** How a process joins a job's group (`startQuery(job, { group })`, `millrace run --group`). */
export interface GroupOptions {
  /** The Kafka consumer group every process of the job joins. */
  id: string;
  /**
   * How long the coordinator waits for a heartbeat before it gives a silent member's tasks to the
   * others (default 10 s); also the lease period of each task.
   */
  sessionTimeout?: Duration;
  /**
   * The Kafka client that keeps the membership: `'kafkajs'` (default; eager rebalances) or
   * `'@platformatic/kafka'` (static membership; Node 22.22 or later). Members of one group may mix them.
   */
  client?: 'kafkajs' | '@platformatic/kafka';
  /**
   * Static membership (`'@platformatic/kafka'` only): this process's fixed identity in the group, e.g.
   * its host name. Restarted within the session timeout, it gets its tasks back without a rebalance.
   */
  instanceId?: string;
}

/** A task this process was given, and what runs it. */
export interface GroupTask {
  /**
   * `0.<p>`: partition p of every source topic; `1.<p>`: partition p of the repartition topic, the
   * keys of the plan's keyed operator that hash to p (when the plan has one).
   */
  readonly task: string;
  /** `waiting`: for the task's lease (its old owner has not let go yet); `running`; `stopping`. */
  readonly state: 'waiting' | 'running' | 'stopping';
}

/** Progress of one task, with the group's view of this process. */
export interface GroupProgress extends StreamingQueryProgress {
  readonly group: {
    readonly id: string;
    readonly memberId: string;
    readonly task: string;
    readonly ownedTasks: string[];
  };
}

export interface GroupEvents {
  /** The group gave this process a new set of tasks. */
  assigned: [string[]];
  progress: [GroupProgress];
  /** A task's query started on this process (its lease held, its checkpoint restored). */
  taskStarted: [string, StreamingQuery];
  taskStopped: [string];
  terminated: [MillraceError | null];
}

/** How long a task waits before it tries its lease again while the old owner still holds it. */
const LEASE_RETRY_MS = 200;

interface TaskRun {
  readonly task: string;
  /** 0: the plan, or its stage below the cut; 1: the stage above the cut. */
  readonly stage: 0 | 1;
  readonly partition: number;
  wanted: boolean;
  query: StreamingQuery | null;
  done: Promise<void>;
}

/**
 * One process's share of a job run by a group of processes (docs/scale-out.md). The process is
 * a member of the job's Kafka consumer group; for each task the group gives it, it runs the job
 * over that task's partitions as a query of its own, checkpointed under
 * `<checkpoint>/tasks/<task>` and locked there by a lease, so a task runs in one process at a time
 * and moves with its state and offsets.
 */
export class GroupQuery extends EventEmitter<GroupEvents> {
  private readonly runs = new Map<string, TaskRun>();
  private membership: GroupShareMembership | null = null;
  private member: string | null = null;
  private stopping = false;
  private error: MillraceError | null = null;
  private ended: Promise<void>;
  private endIt!: () => void;

  private constructor(
    private readonly job: JobLocation,
    private readonly options: StartOptions,
    readonly groupId: string,
    readonly id: string,
    readonly name: string | null,
    private readonly location: string,
    private readonly layoutsOf: (partition: number) => Record<string, unknown>,
    private readonly sessionTimeoutMs: number,
    /** The repartition topic between the plan's two stages, or null for a plan run whole. */
    private readonly repartition: { readonly topic: string; readonly partitions: number } | null,
  ) {
    super();
    this.ended = new Promise((resolve) => {
      this.endIt = resolve;
    });
  }

  /** Plans the job, checks it can run as a group, joins the group and starts the first tasks. */
  static async start(
    job: JobLocation,
    options: StartOptions,
    group: string | GroupOptions,
  ): Promise<GroupQuery> {
    const g = typeof group === 'string' ? { id: group } : group;
    if (g === null || typeof g !== 'object' || typeof g.id !== 'string' || g.id === '') {
      throw invalidArgument('group: give the consumer group id, a non-empty string');
    }
    const sessionTimeoutMs = parseDuration(g.sessionTimeout ?? 10_000, 'group.sessionTimeout');
    const jobUrl = jobUrlOf(job);
    const params: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.params ?? {})) params[k] = String(v);
    const module = await importJob(jobUrl);
    let plan = planJob(module, params, jobUrl);
    const layouts = await resolveLayouts(plan.sources);
    plan = withLayouts(layouts, () => planJob(module, params, jobUrl));
    const shared = checkGroupPlan(plan);
    const point = findCut(plan.definition);
    const location = options.checkpointLocation ?? plan.definition.checkpointLocation;
    if (location === undefined) {
      throw invalidArgument(
        'a group run keeps each task in a checkpoint every process reaches: give it a checkpoint location ' +
          '(--checkpoint dir, or checkpointLocation in the job or startQuery)',
      );
    }
    const topics = [...new Set(shared.flatMap(({ spec, share }) => share.topics(spec)))].sort();
    const partitions = coPartitioned(shared);
    const record = await groupRecord(location, { queryId: randomUUID(), topics, partitions });
    const repartition = point === null ? null : { topic: repartitionTopic(record.queryId), partitions };
    if (repartition !== null) {
      await sourceConnector(point!.source).group!.ensureRepartition(
        point!.source,
        repartition.topic,
        partitions,
      );
    }
    const layoutsOf = (p: number) => {
      const restricted: Record<string, unknown> = { ...layouts };
      for (const { spec, share } of shared) {
        const { key, layout } = share.taskLayout(spec, p);
        restricted[key] = layout;
      }
      return restricted;
    };
    const q = new GroupQuery(
      job,
      options,
      g.id,
      record.queryId,
      options.queryName ?? plan.definition.queryName ?? null,
      location,
      layoutsOf,
      sessionTimeoutMs,
      repartition,
    );
    q.membership = await shared[0]!.share.join(
      shared.map((s) => s.spec),
      {
        groupId: g.id,
        extraTopics: repartition === null ? [] : [repartition.topic],
        client: g.client,
        instanceId: g.instanceId,
        sessionTimeoutMs,
        onAssigned: (a) => {
          q.member = a.memberId;
          q.assign(a.tasks);
        },
        onError: (e) => q.fail(e),
      },
    );
    return q;
  }

  /** The tasks this process owns now. */
  get tasks(): GroupTask[] {
    return [...this.runs.values()]
      .sort((a, b) => a.stage - b.stage || a.partition - b.partition)
      .map((r) => ({
        task: r.task,
        state: !r.wanted ? 'stopping' : r.query === null ? 'waiting' : 'running',
      }));
  }

  /** This process's member id in the group (null before it joined). */
  get memberId(): string | null {
    return this.member;
  }

  /** The query of a task this process runs now, if any. */
  taskQuery(task: string): StreamingQuery | null {
    return this.runs.get(task)?.query ?? null;
  }

  get isActive(): boolean {
    return !this.stopping && this.error === null;
  }

  get exception(): MillraceError | null {
    return this.error;
  }

  /** Resolves once stopped; rejects with the error a task failed with (the process then left the group). */
  async awaitTermination(): Promise<void> {
    await this.ended;
    if (this.error !== null) throw this.error;
  }

  /**
   * Leaves the group (the others take its tasks at once) and stops every task at its next epoch
   * boundary, waiting at most `timeoutMs` (default 3 s) for each.
   */
  async stop(options: { timeoutMs?: number } = {}): Promise<void> {
    await this.shutdown(options.timeoutMs ?? 3000);
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      for (const r of this.runs.values()) r.wanted = false;
      await Promise.all(
        [...this.runs.values()].map(async (r) => {
          await r.query?.stop({ timeoutMs }).catch(() => {});
          await r.done;
        }),
      );
      await this.membership?.leave();
      this.emit('terminated', this.error);
      this.endIt();
    }
    await this.ended;
  }

  private fail(e: unknown): void {
    if (this.error !== null || this.stopping) return;
    this.error =
      e instanceof MillraceError
        ? e
        : new MillraceError(ErrorCode.TASK_FAILED, `group ${this.groupId}: ${(e as Error).message}`, {
            cause: e,
          });
    void this.shutdown(0);
  }

  private assign(tasks: readonly number[]): void {
    if (this.stopping) return;
    const stages: (0 | 1)[] = this.repartition === null ? [0] : [0, 1];
    const byTask = new Map<string, { stage: 0 | 1; partition: number }>(
      tasks.flatMap((p) => stages.map((stage) => [`${stage}.${p}`, { stage, partition: p }] as const)),
    );
    for (const [task, r] of this.runs) {
      if (byTask.has(task) && r.wanted) continue;
      r.wanted = false;
      r.query?.stop().catch(() => {});
    }
    for (const [task, { stage, partition }] of byTask) {
      const existing = this.runs.get(task);
      if (existing?.wanted) continue;
      const run: TaskRun = { task, stage, partition, wanted: true, query: null, done: Promise.resolve() };
      // A task given back while it still stops starts again once it has stopped.
      run.done = (existing?.done ?? Promise.resolve()).then(() => this.runTask(run));
      this.runs.set(task, run);
    }
    this.emit('assigned', [...byTask.keys()]);
  }

  /** Runs a task until it is taken away, the group stops, or it fails (which fails the group). */
  private async runTask(run: TaskRun): Promise<void> {
    const partition = run.partition;
    try {
      while (run.wanted) {
        let q: StreamingQuery;
        try {
          q = await launchQuery(
            this.job,
            {
              ...this.options,
              queryName: `${this.name ?? 'query'}/${run.task}`,
              checkpointLocation: join(this.location, 'tasks', run.task),
              checkpointLease: this.options.checkpointLease ?? { periodMs: this.sessionTimeoutMs },
              options: { workers: 1, ...this.options.options },
            },
            {
              task: run.task,
              queryId: this.id,
              layouts: this.layoutsOf(partition),
              cut:
                this.repartition === null ? null : { stage: run.stage, ...this.repartition, task: partition },
            },
          );
        } catch (e) {
          // The old owner has not let go of the task yet (it stops at an epoch boundary, or its lease
          // runs out once it died): try again while the task is still ours.
          if (e instanceof MillraceError && e.code === ErrorCode.CHECKPOINT_IN_USE) {
            await delay(LEASE_RETRY_MS);
            continue;
          }
          throw e;
        }
        if (q.id !== this.id) {
          await q.stop({ timeoutMs: 0 });
          throw new MillraceError(
            ErrorCode.CHECKPOINT_INCOMPATIBLE_CHANGE,
            `task ${run.task}'s checkpoint belongs to query ${q.id}, not to this group's query ${this.id}`,
          );
        }
        run.query = q;
        const onProgress = (p: StreamingQueryProgress) =>
          this.emit('progress', {
            ...p,
            group: {
              id: this.groupId,
              memberId: this.memberId ?? '',
              task: run.task,
              ownedTasks: this.tasks.map((t) => t.task),
            },
          });
        q.on('progress', onProgress);
        this.emit('taskStarted', run.task, q);
        if (!run.wanted) q.stop().catch(() => {});
        try {
          await q.awaitTermination();
        } finally {
          q.off('progress', onProgress);
          run.query = null;
        }
        break;
      }
    } catch (e) {
      this.fail(e);
    } finally {
      if (this.runs.get(run.task) === run && !run.wanted) this.runs.delete(run.task);
      this.emit('taskStopped', run.task);
    }
  }
}

interface SharedSource {
  readonly spec: SourceSpec;
  readonly share: GroupShare;
}

/**
 * Refuses what a group run cannot do yet: every streaming source must be one whose partitions a
 * group can share (Kafka), all on one cluster; the trigger must run until stopped, and the sink
 * must take writes from several tasks. A keyed operator cuts the plan (`findCut` refuses what one
 * cut cannot carry). Returns the sources.
 */
function checkGroupPlan(plan: AnalyzedPlan): SharedSource[] {
  const refuse = (why: string) => new MillraceError(ErrorCode.UNSUPPORTED_OPERATION, `a group run ${why}`);
  const shared: SharedSource[] = [];
  for (const { spec } of plan.sources) {
    const share = sourceConnector(spec).group;
    if (share === undefined) {
      throw refuse(
        `shares its sources' partitions between processes, and ${spec.description} has none to share`,
      );
    }
    shared.push({ spec, share });
  }
  if (new Set(shared.map(({ spec, share }) => share.cluster(spec))).size > 1) {
    throw refuse('reads one cluster, and the sources name several');
  }
  const { trigger, sink } = plan.definition;
  if (trigger.kind === 'availableNow' || trigger.kind === 'once') {
    throw refuse(`runs until stopped, and Trigger.${trigger.kind}() ends by itself`);
  }
  const refused = sinkConnector(sink).refusesGroup?.(sink);
  if (refused !== undefined) throw refuse(`cannot run this job: ${refused}`);
  return shared;
}

/**
 * How many tasks the sources make: task p reads partition p of every source (of every topic), so
 * each must have the same partitions, as many times each.
 */
function coPartitioned(shared: readonly SharedSource[]): number {
  const shapes = shared.map(({ spec, share }) => {
    const count = new Map<number, number>();
    for (const t of share.tasks(spec)) count.set(t, (count.get(t) ?? 0) + 1);
    return { spec, tasks: [...count.keys()].sort((a, b) => a - b), even: new Set(count.values()).size <= 1 };
  });
  const tasks = shapes[0]?.tasks ?? [];
  for (const s of shapes) {
    if (!s.even || s.tasks.join() !== tasks.join()) {
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        'a group run reads partition p of every source topic in one task, so the topics must have as many ' +
          `partitions; ${s.spec.description}'s topics do not match the others'`,
      );
    }
  }
  return tasks.length;
}
