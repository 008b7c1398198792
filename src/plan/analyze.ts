import type { QueryDefinition } from '../api/writer.js';
import type { SourceSpec } from '../connectors/spec.js';
import { ErrorCode, MillraceError } from '../errors.js';
import { type LogicalNode, type NodeKind, type NodeOf, nodeInputs } from './nodes.js';

/** A plan node with its identity: its position in the plan (post-order). */
export interface PlannedOperator<K extends NodeKind = NodeKind> {
  readonly id: number;
  readonly node: NodeOf<K>;
  readonly inputs: readonly number[];
}

export interface PlannedSource {
  /** Index among the query's sources, in plan order. */
  readonly index: number;
  readonly operatorId: number;
  readonly spec: SourceSpec;
}

/** The logical plan with operator ids assigned and every plan-time check passed. Frozen. */
export interface AnalyzedPlan {
  /** Operators in post-order; `operators[i].id === i`. */
  readonly operators: readonly PlannedOperator[];
  readonly rootId: number;
  readonly sources: readonly PlannedSource[];
  readonly definition: QueryDefinition;
}

/** Short description used in plans and errors: `map#2 'enrich'`. */
export function describeOperator(op: PlannedOperator): string {
  return `${op.node.kind}#${op.id}${op.node.label ? ` '${op.node.label}'` : ''}`;
}

/**
 * Numbers the operators and validates the query. Operators are identified by their position in a
 * post-order walk from the sink, so ids depend only on the plan's shape, never on build order:
 * the driver and every worker, building the same job, agree on them.
 */
export function analyze(definition: QueryDefinition): AnalyzedPlan {
  const operators: PlannedOperator[] = [];
  const ids = new Map<LogicalNode, number>();
  const visit = (node: LogicalNode): number => {
    const known = ids.get(node);
    if (known !== undefined) return known;
    const inputs = nodeInputs(node).map(visit);
    const id = operators.length;
    operators.push(Object.freeze({ id, node, inputs: Object.freeze(inputs) }) as PlannedOperator);
    ids.set(node, id);
    return id;
  };
  const rootId = visit(definition.root);
  const sources: PlannedSource[] = [];
  for (const op of operators) {
    if (op.node.kind === 'source') {
      sources.push(Object.freeze({ index: sources.length, operatorId: op.id, spec: op.node.source }));
    }
  }
  const plan: AnalyzedPlan = Object.freeze({
    operators: Object.freeze(operators),
    rootId,
    sources: Object.freeze(sources),
    definition,
  });
  checkSourceNames(plan);
  checkOutputMode(plan);
  return plan;
}

function checkSourceNames(plan: AnalyzedPlan): void {
  const seen = new Set<string>();
  for (const s of plan.sources) {
    const name = s.spec.name;
    if (name === undefined) continue;
    if (seen.has(name)) {
      throw new MillraceError(
        ErrorCode.DUPLICATE_SOURCE_NAME,
        `two sources are named '${name}': source names must be unique in a query`,
      );
    }
    seen.add(name);
  }
}

/** Output modes a query shape supports (SPEC §3, "Output modes"). */
export function supportedOutputModes(_plan: AnalyzedPlan): readonly ('append' | 'update' | 'complete')[] {
  // Every operator so far is stateless: append and update (the same thing) are allowed, complete
  // needs an aggregation to have a result table.
  return ['append', 'update'];
}

function checkOutputMode(plan: AnalyzedPlan): void {
  const mode = plan.definition.outputMode;
  const allowed = supportedOutputModes(plan);
  if (!allowed.includes(mode)) {
    const root = plan.operators[plan.rootId]!;
    throw new MillraceError(
      ErrorCode.OUTPUT_MODE_NOT_SUPPORTED,
      `output mode '${mode}' is not supported by this query (last operator ${describeOperator(root)}): ` +
        `a query without an aggregation has no result table to output completely; use ${allowed.join(' or ')}`,
    );
  }
}

/** Checked when the query starts: the sink must support the output mode. */
export function checkSinkMode(plan: AnalyzedPlan): void {
  const { sink, outputMode } = plan.definition;
  if (!sink.supportedModes.includes(outputMode)) {
    throw new MillraceError(
      ErrorCode.SINK_MODE_NOT_SUPPORTED,
      `${sink.description} does not support output mode '${outputMode}'; it supports ${sink.supportedModes.join(', ')}`,
    );
  }
}
