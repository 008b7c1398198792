import type { SourceSpec } from '../connectors/spec.js';
import { ErrorCode, MillraceError } from '../errors.js';
import { isWindowTime } from './expressions.js';
import type { QueryDefinition } from './job.js';
import {
  type LogicalNode,
  type NodeKind,
  type NodeOf,
  nodeInputs,
  STATEFUL_KINDS,
  TWO_INPUT_KINDS,
} from './nodes.js';
import type { OutputMode } from './output-mode.js';
import type { QueryOptions } from './query-options.js';
import { isMicroBatch } from './trigger.js';

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

/** An event-time input: a `withWatermark` operator. */
export interface WatermarkInput {
  /** Index among the plan's watermark operators (the `arg` of its in-band WATERMARK markers). */
  readonly index: number;
  readonly operatorId: number;
  readonly column: string;
  readonly delayMs: number;
  readonly idleTimeoutMs: number | undefined;
}

/** The logical plan with operator ids assigned and every plan-time check passed. Frozen. */
export interface AnalyzedPlan {
  /** Operators in post-order; `operators[i].id === i`. */
  readonly operators: readonly PlannedOperator[];
  readonly rootId: number;
  readonly sources: readonly PlannedSource[];
  readonly watermarks: readonly WatermarkInput[];
  /** For each operator, the watermark inputs upstream of it (indices into `watermarks`). */
  readonly watermarksAbove: readonly (readonly number[])[];
  /**
   * For each operator, how far (ms) its watermark trails the one in force: the stream–stream joins
   * upstream of it hold rows back by their time range (see {@link joinWatermarkLag}). 0 for most.
   */
  readonly watermarkLags: readonly number[];
  /**
   * For each operator, the columns of its output rows that hold an event time some watermark
   * bounds, with those watermark inputs (see {@link timeColumnsOf}).
   */
  readonly timeColumns: readonly ReadonlyMap<string, readonly number[]>[];
  readonly definition: QueryDefinition;
}

/** Short description used in plans and errors: `map#2 'enrich'`. */
export function describeOperator(op: { readonly id: number; readonly node: LogicalNode }): string {
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
  const watermarks: WatermarkInput[] = [];
  const watermarksAbove: number[][] = [];
  for (const op of operators) {
    const above = new Set<number>();
    for (const i of op.inputs) for (const w of watermarksAbove[i]!) above.add(w);
    if (op.node.kind === 'watermark') {
      above.add(watermarks.length);
      watermarks.push(
        Object.freeze({
          index: watermarks.length,
          operatorId: op.id,
          column: op.node.column,
          delayMs: op.node.delayMs,
          idleTimeoutMs: op.node.idleTimeoutMs,
        }),
      );
    }
    watermarksAbove.push([...above].sort((a, b) => a - b));
  }
  const timeColumns: ReadonlyMap<string, readonly number[]>[] = [];
  for (const op of operators) timeColumns.push(timeColumnsOf(op, timeColumns, watermarks, watermarksAbove));
  // An operator's input watermark is the least its inputs emit by: each join takes its lag off.
  const watermarkLags: number[] = [];
  for (const op of operators) {
    let lag = 0;
    for (const i of op.inputs) {
      const input = operators[i]!;
      const out = watermarkLags[i]! + (input.node.kind === 'streamJoin' ? joinWatermarkLag(input.node) : 0);
      lag = Math.max(lag, out);
    }
    watermarkLags.push(lag);
  }
  const plan: AnalyzedPlan = Object.freeze({
    operators: Object.freeze(operators),
    rootId,
    sources: Object.freeze(sources),
    watermarks: Object.freeze(watermarks),
    watermarksAbove: Object.freeze(watermarksAbove.map((w) => Object.freeze(w))),
    watermarkLags: Object.freeze(watermarkLags),
    timeColumns: Object.freeze(timeColumns),
    definition,
  });
  checkSourceNames(plan);
  checkSourceEvolution(plan, definition.options);
  checkAsyncProgressTracking(plan, definition.options);
  checkTwoInputs(plan);
  checkStatefulOperators(plan);
  checkRealTimeOperators(plan);
  checkOutputMode(plan);
  return plan;
}

/**
 * How far behind its input watermark `W` a stream–stream join's output watermark is, as Spark
 * computes it (the least of both sides' state watermarks and `W`): with the range
 * `r ∈ [l + lower, l + upper]`, a left row stays buffered until `l + upper <= W` and a right row
 * until `r − lower <= W`, so a joined or outer row can carry a left time as old as `W − upper` and a
 * right time as old as `W + lower`. The operators after the join keep time by `W − lag`.
 */
export function joinWatermarkLag(node: NodeOf<'streamJoin'>): number {
  return Math.max(0, node.range.upperMs, -node.range.lowerMs);
}

/**
 * The event-time columns of an operator's output: `withWatermark` adds its column; a column copied
 * from one (`withColumn('t', 'ts')`, a `select` of it) or `windowTime` of one is one too. Rows
 * have no schema, so what an operator that makes new rows (`map`, a `select` of functions) keeps
 * cannot be known: the columns pass through it. A stateful operator makes its own rows: an
 * aggregation's are its grouping columns and its window (a window over an event-time column is
 * one itself, its time `end − 1`), `transformWithState`'s only the `eventTimeColumn` it declares
 * (bound by every watermark above it); deduplication and joins pass their input rows on, columns
 * and all.
 */
function timeColumnsOf(
  op: PlannedOperator,
  below: readonly ReadonlyMap<string, readonly number[]>[],
  watermarks: readonly WatermarkInput[],
  watermarksAbove: readonly (readonly number[])[],
): ReadonlyMap<string, readonly number[]> {
  const node = op.node;
  const merged = new Map<string, readonly number[]>();
  for (const i of op.inputs) {
    for (const [column, ws] of below[i]!) merged.set(column, union(merged.get(column), ws));
  }
  const alias = (name: string, expr: unknown) => {
    const from = typeof expr === 'string' ? expr : isWindowTime(expr) ? expr.column : null;
    const ws = from === null ? undefined : merged.get(from);
    if (ws !== undefined) merged.set(name, union(merged.get(name), ws));
  };
  switch (node.kind) {
    case 'watermark': {
      const w = watermarks.find((x) => x.operatorId === op.id)!;
      merged.set(node.column, union(merged.get(node.column), [w.index]));
      return merged;
    }
    case 'withColumn':
      alias(node.column, node.expr);
      return merged;
    case 'select':
      for (const c of node.columns) alias(c.name, c.expr);
      return merged;
    case 'aggregate': {
      const out = new Map<string, readonly number[]>();
      for (const k of node.keys) {
        const ws = merged.get(k);
        if (ws !== undefined) out.set(k, ws);
      }
      const ws = node.window === undefined ? undefined : merged.get(node.window.column);
      if (ws !== undefined) out.set('window', ws);
      return out;
    }
    case 'transformWithState': {
      const column = node.eventTimeColumn;
      const above = watermarksAbove[op.id]!;
      return column === undefined || above.length === 0 ? new Map() : new Map([[column, above]]);
    }
    default:
      return merged;
  }
}

function union(a: readonly number[] | undefined, b: readonly number[]): readonly number[] {
  if (a === undefined) return b;
  return [...new Set([...a, ...b])].sort((x, y) => x - y);
}

/**
 * Real-time mode never ends a batch, so an operator that holds a partition's rows until one ends
 * (`mapPartitions`) would hold them forever: refused, as Spark's real-time mode refuses it.
 */
function checkRealTimeOperators(plan: AnalyzedPlan): void {
  if (isMicroBatch(plan.definition.trigger)) return;
  for (const union of plan.operators.filter((u) => u.node.kind === 'union')) {
    const before = statefulOperators(plan).find((s) => reachesFrom(plan, s.id, union.id));
    if (before === undefined) continue;
    throw new MillraceError(
      ErrorCode.REAL_TIME_MODE_UNSUPPORTED_OPERATOR,
      `${describeOperator(before)} comes before ${describeOperator(union)}: real-time mode runs no ` +
        'stateful operator before a union; union the streams first, or use a micro-batch trigger',
    );
  }
  const op = plan.operators.find((o) => o.node.kind === 'mapPartitions');
  if (op === undefined) return;
  throw new MillraceError(
    ErrorCode.REAL_TIME_MODE_UNSUPPORTED_OPERATOR,
    `${describeOperator(op)} holds all the rows of a partition until its batch ends, which real-time mode ` +
      'never does; use a scalar udf() or map for per-row work, or arrowUdf / mapInArrow for batched work ' +
      '(arrowMaxRecordsPerBatch sets the batch size), or a micro-batch trigger',
  );
}

/** Whether the rows of operator `from` reach operator `to`. */
function reachesFrom(plan: AnalyzedPlan, from: number, to: number): boolean {
  if (from === to) return true;
  return plan.operators[to]!.inputs.some((i) => reachesFrom(plan, from, i));
}

/** The stateful operators of a plan, in post-order. */
export function statefulOperators(plan: AnalyzedPlan): PlannedOperator[] {
  return plan.operators.filter((op) => STATEFUL_KINDS.includes(op.node.kind));
}

/**
 * The watermark inputs that bound `column` of the rows reaching operator `op` (its inputs' time
 * columns, see {@link timeColumnsOf}): empty when the column holds no watermarked event time.
 */
export function eventTimeWatermarks(
  plan: AnalyzedPlan,
  op: { id: number },
  column: string,
): WatermarkInput[] {
  const found = new Set<number>();
  for (const i of plan.operators[op.id]!.inputs)
    for (const w of plan.timeColumns[i]!.get(column) ?? []) found.add(w);
  return [...found].sort((a, b) => a - b).map((i) => plan.watermarks[i]!);
}

/** The watermark inputs that bound `column` of operator `id`'s output rows. */
export function outputTimeWatermarks(plan: AnalyzedPlan, id: number, column: string): WatermarkInput[] {
  return (plan.timeColumns[id]!.get(column) ?? []).map((i) => plan.watermarks[i]!);
}

/**
 * An aggregation without a window grouped by an event-time column itself: its groups are final
 * once the watermark passes that time (Spark: a grouping column with a watermark). The first such
 * grouping column, or null.
 */
export function aggregationTimeKey(plan: AnalyzedPlan, op: PlannedOperator<'aggregate'>): string | null {
  if (op.node.window !== undefined) return null;
  return op.node.keys.find((k) => eventTimeWatermarks(plan, op, k).length > 0) ?? null;
}

/** For each stateful operator, the stateful operators its rows go on to (nearest first). */
export function statefulDownstream(plan: AnalyzedPlan): Map<number, PlannedOperator[]> {
  const above = plan.operators.map(() => new Set<number>());
  for (const op of plan.operators) {
    for (const i of op.inputs) {
      above[op.id]!.add(i);
      for (const j of above[i]!) above[op.id]!.add(j);
    }
  }
  const stateful = statefulOperators(plan);
  const out = new Map<number, PlannedOperator[]>();
  for (const s of stateful)
    out.set(
      s.id,
      stateful.filter((t) => above[t.id]!.has(s.id)),
    );
  return out;
}

/**
 * Whether watermark `w`'s column reaches operator `op` as the watermark saw it: every operator on
 * the way from the watermark passes the column on unchanged (a filter, a union, a `withColumn` of
 * another column, a `select` of the column itself…). A `map` or anything else that makes new rows
 * might drop or change it, so it does not count.
 */
export function watermarkColumnReaches(plan: AnalyzedPlan, op: { id: number }, w: WatermarkInput): boolean {
  // true: every path from `id` up to the watermark keeps the column; false: one does not;
  // null: no path from `id` leads to the watermark.
  const reaches = (id: number): boolean | null => {
    if (id === w.operatorId) return true;
    const here = plan.operators[id]!;
    let leads = false;
    for (const input of here.inputs) {
      const r = reaches(input);
      if (r === false) return false;
      if (r === true) leads = true;
    }
    if (!leads) return null;
    return keepsColumn(here.node, w.column);
  };
  let leads = false;
  for (const input of plan.operators[op.id]!.inputs) {
    const r = reaches(input);
    if (r === false) return false;
    if (r === true) leads = true;
  }
  return leads;
}

function keepsColumn(node: LogicalNode, column: string): boolean {
  switch (node.kind) {
    case 'filter':
    case 'watermark':
    case 'repartition':
    case 'union':
    case 'dedup':
      return true;
    case 'withColumn':
      return node.column !== column;
    case 'select':
      return node.columns.some((c) => c.name === column && c.expr === column);
    default:
      return false;
  }
}

/**
 * The two sides of a union or a stream–stream join must not share a node: the physical plan cannot
 * run one row down two paths.
 */
function checkTwoInputs(plan: AnalyzedPlan): void {
  const below = plan.operators.map(() => new Set<number>());
  for (const op of plan.operators) {
    for (const i of op.inputs) {
      below[op.id]!.add(i);
      for (const j of below[i]!) below[op.id]!.add(j);
    }
    if (!TWO_INPUT_KINDS.includes(op.node.kind)) continue;
    const [a, b] = op.inputs as [number, number];
    const left = new Set([a, ...below[a]!]);
    const shared = [b, ...below[b]!].filter((x) => left.has(x));
    if (shared.length > 0) {
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        `${describeOperator(op)} joins two branches of the same stream (both read ` +
          `${describeOperator(plan.operators[Math.min(...shared)]!)}): ` +
          `${op.node.kind === 'union' ? 'union' : 'join'} streams of different sources`,
      );
    }
  }
}

function checkStatefulOperators(plan: AnalyzedPlan): void {
  const stateful = statefulOperators(plan);
  for (const op of stateful) {
    if (op.node.kind === 'dedup' && op.node.withinWatermark && plan.watermarksAbove[op.id]!.length === 0) {
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        `${describeOperator(op)}: dropDuplicatesWithinWatermark forgets keys as the watermark passes them, ` +
          'so it needs withWatermark(column, delay) before it',
      );
    }
    if (
      op.node.kind === 'transformWithState' &&
      op.node.timeMode === 'eventTime' &&
      plan.watermarksAbove[op.id]!.length === 0
    ) {
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        `${describeOperator(op)}: timeMode 'eventTime' fires timers as the watermark passes them, ` +
          "so it needs withWatermark(column, delay) before groupByKey; or use timeMode 'processingTime'",
      );
    }
    if (
      op.node.kind === 'transformWithState' &&
      op.node.eventTimeColumn !== undefined &&
      plan.watermarksAbove[op.id]!.length === 0
    ) {
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        `${describeOperator(op)}: eventTimeColumn '${op.node.eventTimeColumn}' carries the watermark on to ` +
          'the operators after it, so it needs withWatermark(column, delay) before groupByKey',
      );
    }
    if (op.node.kind === 'aggregate' && op.node.window?.kind === 'session' && op.node.keys.length === 0) {
      throw new MillraceError(
        ErrorCode.UNSUPPORTED_OPERATION,
        `${describeOperator(op)} groups by a session window alone: sessions are per group, so group by ` +
          'at least one column besides sessionWindow(...)',
      );
    }
  }
  for (const op of stateful)
    if (op.node.kind === 'streamJoin') checkStreamJoin(plan, op as PlannedOperator<'streamJoin'>);
}

/**
 * A stream–stream join forgets a row once the other side's watermark makes a match impossible, so
 * each side needs a watermark on the time column its range condition names.
 */
function checkStreamJoin(plan: AnalyzedPlan, op: PlannedOperator<'streamJoin'>): void {
  const { leftColumn, rightColumn } = op.node.range;
  const sides: [string, number, string][] = [
    ['left', op.inputs[0]!, leftColumn],
    ['right', op.inputs[1]!, rightColumn],
  ];
  for (const [side, input, column] of sides) {
    if (outputTimeWatermarks(plan, input, column).length > 0) continue;
    throw new MillraceError(
      ErrorCode.STREAM_JOIN_UNBOUNDED_STATE,
      `${describeOperator(op)}: the ${side} input has no watermark on '${column}', the column its ` +
        `time-range condition names, so its rows could never be forgotten: add ` +
        `withWatermark('${column}', delay) to the ${side} stream before the join`,
    );
  }
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

/**
 * With `sourceEvolution` the checkpoint keeps offsets by source name (offset log v2, docs/operations.md), so
 * every source needs one. Checked at plan time against the job's options, and again by the driver
 * against the options a run overrides them with.
 */
export function checkSourceEvolution(
  plan: AnalyzedPlan,
  options: Pick<QueryOptions, 'sourceEvolution'>,
): void {
  if (!options.sourceEvolution) return;
  const unnamed = plan.sources.filter((s) => s.spec.name === undefined);
  if (unnamed.length === 0) return;
  const list = unnamed.map((s) => `source ${s.index} (${s.spec.kind})`).join(', ');
  throw new MillraceError(
    ErrorCode.UNNAMED_STREAMING_SOURCES_WITH_ENFORCEMENT,
    `sourceEvolution is on, so every source must be named, and ${list} ${unnamed.length === 1 ? 'has' : 'have'} ` +
      `no name: give ${unnamed.length === 1 ? 'it' : 'each'} one, e.g. sources.${unnamed[0]!.spec.kind}({ name: 'orders', ... }) ` +
      '(names match [a-zA-Z0-9_]+ and are unique in the query)',
  );
}

/**
 * Asynchronous progress tracking writes the logs for only some epochs, so a restart may process
 * epochs again: not with triggers that end the query after what is available (Spark refuses them
 * too). What the sink allows is its connector's to say (`connectors/checks.ts`).
 */
export function checkAsyncProgressTracking(
  plan: AnalyzedPlan,
  options: Pick<QueryOptions, 'asyncProgressTracking'>,
): void {
  if (!options.asyncProgressTracking) return;
  const { trigger } = plan.definition;
  if (trigger.kind === 'availableNow' || trigger.kind === 'once') {
    throw new MillraceError(
      ErrorCode.UNSUPPORTED_OPERATION,
      `asyncProgressTracking cannot be used with Trigger.${trigger.kind}(): such a query must record ` +
        'exactly what it processed before it ends; use Trigger.processingTime() or Trigger.realTime(), ' +
        'or turn asyncProgressTracking off',
    );
  }
}

/** Why a mode is refused for a query shape; absent when the mode works. */
type ModeSupport = Partial<Record<OutputMode, string>>;

/**
 * Output modes a query shape supports (docs/semantics.md, "Output modes"), with the reason for each mode it
 * does not, and the operator that refuses it. The stateful operators nearest the sink decide by
 * their kind; one that another stateful operator follows must hand it final rows: an aggregation
 * there needs append mode. Complete mode needs micro-batch execution: real-time execution has no
 * batches to output the whole result table at.
 */
export function outputModeSupport(plan: AnalyzedPlan): { operator: PlannedOperator; refused: ModeSupport } {
  const downstream = statefulDownstream(plan);
  if (downstream.size === 0) {
    return {
      operator: plan.operators[plan.rootId]!,
      refused: { complete: 'a query without an aggregation has no result table to output completely' },
    };
  }
  const refused: ModeSupport = {};
  const refusedBy: Partial<Record<OutputMode, PlannedOperator>> = {};
  let first: PlannedOperator | undefined;
  for (const [id, next] of downstream) {
    const op = plan.operators[id]!;
    first ??= op;
    const own = next.length === 0 ? lastOperatorModes(plan, op) : followedOperatorModes(op, next[0]!);
    for (const mode of ['append', 'update', 'complete'] as const) {
      if (own[mode] === undefined || refused[mode] !== undefined) continue;
      refused[mode] = own[mode];
      refusedBy[mode] = op;
    }
  }
  const mode = plan.definition.outputMode;
  return { operator: refusedBy[mode] ?? first!, refused };
}

/** What a stateful operator that another one follows allows: it must hand on final rows. */
function followedOperatorModes(op: PlannedOperator, next: PlannedOperator): ModeSupport {
  if (op.node.kind === 'aggregate') {
    const why =
      `its rows go on to ${describeOperator(next)}, which must get each group once, final, as append mode ` +
      'emits it when the watermark closes it (Spark allows several aggregations in append mode only)';
    return { update: why, complete: why };
  }
  if (op.node.kind === 'streamJoin') {
    const why =
      'a stream–stream join emits each joined row once and never changes it, so a query that holds ' +
      'one runs in append mode (Spark allows a join between two streams in append mode only)';
    return { update: why, complete: why };
  }
  // transformWithState's rows are the next operator's input: the mode its processor declares says
  // how they were made, and the query's mode is for the rows the sink gets.
  return {};
}

/** transformWithState emits by the output mode its processor declares: the query's must match. */
function declaredModes(op: PlannedOperator<'transformWithState'>): ModeSupport {
  const declared = op.node.outputMode;
  const other = declared === 'append' ? 'update' : 'append';
  return {
    complete: 'transformWithState has no result table to output completely',
    [other]: `its processor declares outputMode '${declared}' and the query's must be the same`,
  };
}

/** What the stateful operator nearest the sink allows, by its kind. */
function lastOperatorModes(plan: AnalyzedPlan, stateful: PlannedOperator): ModeSupport {
  if (stateful.node.kind === 'streamJoin') {
    const why =
      'a stream–stream join emits each joined row once and never changes it, and an outer row once ' +
      'the watermark rules out a match';
    return { update: why, complete: why };
  }
  if (stateful.node.kind === 'dedup') {
    return { complete: 'deduplication has no result table to output completely; use append or update' };
  }
  if (stateful.node.kind === 'transformWithState')
    return declaredModes(stateful as PlannedOperator<'transformWithState'>);
  const refused: ModeSupport = isMicroBatch(plan.definition.trigger)
    ? {}
    : {
        complete:
          'complete mode outputs the whole result table at each batch, which needs micro-batch execution ' +
          '(Trigger.processingTime, availableNow or once)',
      };
  const node = stateful.node;
  if (node.kind === 'aggregate' && node.window?.kind === 'session') {
    refused.update =
      'a session changes its range as rows arrive, so an updated row cannot replace the earlier one ' +
      '(Spark refuses it too); use append with a watermark on the session column, or complete';
  }
  if (node.kind === 'aggregate') {
    const column = node.window?.column;
    const timed =
      column === undefined
        ? aggregationTimeKey(plan, stateful as PlannedOperator<'aggregate'>) !== null
        : eventTimeWatermarks(plan, stateful, column).length > 0;
    if (!timed) {
      refused.append =
        column === undefined
          ? 'append mode emits a group once it can no longer change, which needs a time window, or a ' +
            'grouping column, with a watermark on its event time'
          : `append mode emits a window once the watermark passes its end: add withWatermark('${column}', delay) before groupBy`;
    }
  }
  return refused;
}

export function supportedOutputModes(plan: AnalyzedPlan): OutputMode[] {
  const { refused } = outputModeSupport(plan);
  return (['append', 'update', 'complete'] as const).filter((m) => refused[m] === undefined);
}

function checkOutputMode(plan: AnalyzedPlan): void {
  const mode = plan.definition.outputMode;
  const { operator, refused } = outputModeSupport(plan);
  const why = refused[mode];
  if (why !== undefined) {
    const allowed = supportedOutputModes(plan);
    throw new MillraceError(
      ErrorCode.OUTPUT_MODE_NOT_SUPPORTED,
      `output mode '${mode}' is not supported for ${describeOperator(operator)}: ${why}; ` +
        (allowed.length === 0 ? 'no output mode works here' : `modes that work here: ${allowed.join(', ')}`),
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
