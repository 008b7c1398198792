import { createHash } from 'node:crypto';
import type { AnalyzedPlan } from './analyze.js';
import { describeArrowType } from './arrow-udf.js';
import { type ColumnExpr, describeExpr } from './expressions.js';
import type { LogicalNode, NodeKind } from './nodes.js';
import { describeKey } from './physical.js';

/** What identifies each node kind's shape. A new kind does not compile until it is listed. */
const SHAPE: Record<NodeKind, (node: any, withCode: boolean) => unknown> = {
  source: (n: Extract<LogicalNode, { kind: 'source' }>) => [
    n.source.kind,
    n.source.name,
    n.source.partitions,
  ],
  map: (n, code) => code && String(n.fn),
  filter: (n, code) => code && String(n.fn),
  flatMap: (n, code) => code && String(n.fn),
  mapInArrow: (n: Extract<LogicalNode, { kind: 'mapInArrow' }>, code) => [
    n.maxRecordsPerBatch,
    code && String(n.fn),
  ],
  mapPartitions: (n, code) => code && String(n.fn),
  select: (n: Extract<LogicalNode, { kind: 'select' }>, code) =>
    n.columns.map((c) => [c.name, code ? describeExpr(c.expr) + exprCode(c.expr) : exprShape(c.expr)]),
  withColumn: (n: Extract<LogicalNode, { kind: 'withColumn' }>, code) => [
    n.column,
    code ? exprCode(n.expr) : exprShape(n.expr),
  ],
  watermark: (n: Extract<LogicalNode, { kind: 'watermark' }>) => [n.column, n.delayMs, n.idleTimeoutMs],
  aggregate: (n: Extract<LogicalNode, { kind: 'aggregate' }>, code) => [
    n.keys,
    n.window === undefined
      ? null
      : n.window.kind === 'session'
        ? ['session', n.window.column, n.window.gapMs]
        : [n.window.column, n.window.sizeMs, n.window.slideMs, n.window.startOffsetMs],
    n.aggregates.map((a) => [a.name, a.spec.description, code && String(a.spec.aggregator.add)]),
  ],
  dedup: (n: Extract<LogicalNode, { kind: 'dedup' }>) => [n.keys, n.withinWatermark],
  transformWithState: (n: Extract<LogicalNode, { kind: 'transformWithState' }>, code) => [
    n.timeMode,
    n.outputMode,
    n.timerFiring,
    n.states.map((d) => [d.name, d.kind, d.ttlMs]),
    code && String(n.key),
  ],
  union: () => null,
  staticJoin: (n: Extract<LogicalNode, { kind: 'staticJoin' }>, code) => [
    n.keys,
    n.type,
    n.table.kind === 'file' ? [n.table.path, n.table.format] : code && String(n.table.load),
    code && String(n.combine),
  ],
  streamJoin: (n: Extract<LogicalNode, { kind: 'streamJoin' }>, code) => [
    n.keys,
    n.type,
    n.range,
    code && String(n.combine),
  ],
  repartition: (n: Extract<LogicalNode, { kind: 'repartition' }>, code) => [
    describeKey(n.key),
    n.partitions,
    code && String(n.key),
  ],
};

/**
 * A hash of the plan's shape. With `withCode`, user function text is included too: the driver uses
 * that form to check that every worker built exactly the same plan from the job module.
 */
export function planFingerprint(plan: AnalyzedPlan, withCode: boolean): string {
  const parts = plan.operators.map((op) => [
    op.id,
    op.node.kind,
    op.inputs,
    op.node.label,
    SHAPE[op.node.kind](op.node, withCode),
  ]);
  const d = plan.definition;
  parts.push(['sink', d.sink.kind, d.outputMode]);
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

/**
 * An expression's JavaScript type (as checkpoints made before Arrow UDFs recorded it), and an
 * Arrow UDF's columns, types and batch size (without code).
 */
function exprShape(e: ColumnExpr): unknown {
  if (typeof e !== 'object' || e.kind !== 'arrowUdf') return typeof e;
  return [e.kind, e.input, describeArrowType(e.returns), e.maxRecordsPerBatch];
}

/** An expression with the code it runs (a function's text, a UDF's functions). */
function exprCode(e: ColumnExpr): string {
  if (typeof e !== 'object') return String(e);
  if (e.kind === 'lit') return JSON.stringify(e.value) ?? String(e.value);
  if (e.kind === 'arrowUdf') return JSON.stringify(exprShape(e)) + String(e.fn);
  if (e.kind === 'windowTime') return `windowTime(${e.column})`;
  return String(e.udf.fn) + e.args.map(exprCode).join(',');
}
