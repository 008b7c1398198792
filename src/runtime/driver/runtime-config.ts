import { availableParallelism } from 'node:os';
import type { CheckpointManager, RecoveryPoint } from '../../checkpoint/manager.js';
import type { ResolvedLayouts } from '../../connectors/layouts.js';
import type { AnalyzedPlan } from '../../plan/analyze.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { QueryOptions } from '../../plan/query-options.js';
import type { PlanCut } from '../group/cut-plan.js';
import type { Clock } from '../time/clock.js';

/** What a run of a query is started with (`startQuery`), and what its parts read of it. */
export interface RuntimeConfig {
  /** The checkpoint the query writes, and where this run resumes from (both null: none). */
  readonly checkpoint: CheckpointManager | null;
  readonly recovery: RecoveryPoint | null;
  /** The layouts of sources whose partitions were resolved at start, by key (see `connectors/layouts.ts`). */
  readonly layouts: ResolvedLayouts;
  /** The half of the plan a group task runs, or null (see `group/cut-plan.ts`). */
  readonly cut: PlanCut | null;
  readonly queryId: string;
  /**
   * The group task this run is (`0.3`: partition 3 of the job's sources; docs/scale-out.md), or
   * null for a query run whole in one process.
   */
  readonly task: string | null;
  readonly runId: string;
  readonly name: string | null;
  readonly jobUrl: string;
  readonly params: Readonly<Record<string, string>>;
  readonly plan: AnalyzedPlan;
  readonly physical: PhysicalPlan;
  readonly fingerprint: string;
  readonly options: QueryOptions;
  readonly defaultShufflePartitions: number;
  readonly clock: Clock;
  readonly wallOffset: number;
}

/** How many worker threads a query gets: as asked, else the cores, never more than its tasks. */
export function resolveWorkers(options: QueryOptions): number {
  return options.workers ?? Math.max(1, availableParallelism());
}
