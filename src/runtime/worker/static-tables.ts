import { readStaticFile } from '../../connectors/static-table.js';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import type { StaticIndex } from '../../operators/contract.js';
import { indexStaticTable } from '../../operators/static-table.js';
import { type AnalyzedPlan, describeOperator } from '../../plan/analyze.js';
import type { StaticTable } from '../../plan/join.js';
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
        tables.set(op.id, indexStaticTable(op.node, await loadRows(op.node.table)));
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

/** A static table's rows: what its function returns, or its file's rows (read by the files connector). */
async function loadRows(table: StaticTable): Promise<Iterable<unknown>> {
  if (table.kind === 'file') return readStaticFile(table.path, table.format);
  const rows = await table.load();
  if (rows == null || typeof (rows as Iterable<unknown>)[Symbol.iterator] !== 'function') {
    throw invalidArgument('the static table function must return (or resolve to) an iterable of rows');
  }
  return rows;
}
