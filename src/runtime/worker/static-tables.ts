import { ErrorCode, MillraceError } from '../../errors.js';
import { loadStaticIndex, type StaticIndex } from '../../operators/static-table.js';
import { type AnalyzedPlan, describeOperator } from '../../plan/analyze.js';
import type { PhysicalPlan } from '../../plan/physical.js';
import type { TaskSpec } from '../messages.js';

/**
 * Loads the static table of every stream–static join that runs on this host, once for all its
 * tasks, before the host starts: the join's operators then only look rows up. A table that cannot
 * be loaded fails the query before any row is read.
 */
export async function loadStaticTables(
  plan: AnalyzedPlan,
  physical: PhysicalPlan,
  tasks: readonly Pick<TaskSpec, 'stage'>[],
): Promise<Map<number, StaticIndex>> {
  const tables = new Map<number, StaticIndex>();
  const stages = new Set(tasks.map((t) => t.stage));
  for (const stage of stages) {
    for (const op of physical.stages[stage]!.chain) {
      if (op.node.kind !== 'staticJoin' || tables.has(op.id)) continue;
      try {
        tables.set(op.id, await loadStaticIndex(op.node));
      } catch (e) {
        throw new MillraceError(
          ErrorCode.SOURCE_READ_FAILED,
          `${describeOperator(plan.operators[op.id]!)}: loading the static table failed: ${(e as Error)?.message ?? String(e)}`,
          { cause: e, operator: { id: op.id, kind: op.node.kind } },
        );
      }
    }
  }
  return tables;
}
