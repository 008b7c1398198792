import type { AnalyzedPlan, PlannedOperator } from '../plan/analyze.js';
import type { NodeKind } from '../plan/nodes.js';
import { runsArrowCode } from '../plan/physical.js';
import { AggregateOperator } from './aggregate.js';
import { ArrowProjectionOperator, MapInArrowOperator } from './arrow-batch.js';
import type { OperatorContext, RowSink } from './contract.js';
import { DedupOperator } from './dedup.js';
import { FilterOperator } from './filter.js';
import { FlatMapOperator } from './flat-map.js';
import { MapOperator } from './map.js';
import { MapPartitionsOperator } from './map-partitions.js';
import { SelectOperator } from './select.js';
import { StaticJoinOperator } from './static-join.js';
import { StreamJoinOperator } from './stream-join.js';
import { TransformWithStateOperator } from './transform-with-state.js';
import { WatermarkOperator } from './watermark.js';
import { WithColumnOperator } from './with-column.js';

type Factory = (op: PlannedOperator<any>, next: RowSink, ctx: OperatorContext, plan: AnalyzedPlan) => RowSink;

const notInChain =
  (why: string): Factory =>
  (op) => {
    throw new Error(`internal: ${op.node.kind}#${op.id} cannot be chained (${why})`);
  };

/** How each node kind becomes a chained operator. A new kind does not compile until listed. */
const FACTORIES: Record<NodeKind, Factory> = {
  source: notInChain('sources feed a stage'),
  repartition: notInChain('shuffles end a stage'),
  union: notInChain('a union gathers its inputs into a stage'),
  map: (op, next, ctx) => new MapOperator(op, next, ctx),
  filter: (op, next, ctx) => new FilterOperator(op, next, ctx),
  flatMap: (op, next, ctx) => new FlatMapOperator(op, next, ctx),
  mapInArrow: (op, next, ctx) => new MapInArrowOperator(op, next, ctx),
  mapPartitions: (op, next, ctx) => new MapPartitionsOperator(op, next, ctx),
  select: (op, next, ctx) =>
    runsArrowCode(op.node) ? new ArrowProjectionOperator(op, next, ctx) : new SelectOperator(op, next, ctx),
  withColumn: (op, next, ctx) =>
    runsArrowCode(op.node)
      ? new ArrowProjectionOperator(op, next, ctx)
      : new WithColumnOperator(op, next, ctx),
  watermark: (op, next, ctx, plan) => new WatermarkOperator(op, next, ctx, plan),
  aggregate: (op, next, ctx, plan) => new AggregateOperator(op, next, ctx, plan),
  dedup: (op, next, ctx, plan) => new DedupOperator(op, next, ctx, plan),
  transformWithState: (op, next, ctx, plan) => new TransformWithStateOperator(op, next, ctx, plan),
  staticJoin: (op, next, ctx) => new StaticJoinOperator(op, next, ctx),
  streamJoin: (op, next, ctx) => new StreamJoinOperator(op, next, ctx),
};

/** Fuses a stage's operators into one chain ending at `output`; returns them in row order. */
export function buildChain(
  chain: readonly PlannedOperator[],
  output: RowSink,
  ctx: OperatorContext,
  plan: AnalyzedPlan,
): RowSink[] {
  const ops: RowSink[] = [];
  let next = output;
  for (let i = chain.length - 1; i >= 0; i--) {
    const op = chain[i]!;
    next = FACTORIES[op.node.kind](op, next, ctx, plan);
    ops.unshift(next);
  }
  return ops;
}

export type {
  HoldingOperator,
  OperatorContext,
  RowSink,
  StatefulOperator,
  StateOperatorCounters,
} from './contract.js';
export { hasTwoInputs, isHolding, isStateful } from './contract.js';
