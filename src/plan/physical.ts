import { type AnalyzedPlan, describeOperator, type PlannedOperator, type PlannedSource } from './analyze.js';
import type { KeySpec, LogicalNode, NodeKind } from './nodes.js';
import type { QueryOptions } from './query-options.js';

export type StageInput =
  | { readonly kind: 'source'; readonly source: PlannedSource }
  | { readonly kind: 'shuffle'; readonly fromStage: number };

export type StageOutput =
  | {
      readonly kind: 'shuffle';
      readonly toStage: number;
      readonly key: KeySpec;
      /**
       * `hash`: by a stable hash of the key. `forward`: producer partition p goes to partition
       * p mod n (a union gathering its inputs; order per producer kept, no key needed).
       */
      readonly partitioning: 'hash' | 'forward';
      /** The operator that asked for the shuffle (named in errors from the key function). */
      readonly operator: PlannedOperator;
      /**
       * The only columns the next stage reads, or null for whole rows. Rows cross the shuffle with
       * just these (Spark's column pruning before an exchange): an aggregation reads its keys, its
       * window's column and its aggregates' columns, and builds its output rows from them alone.
       */
      readonly columns: readonly string[] | null;
    }
  | { readonly kind: 'sink' };

/**
 * A stage: what one task per partition runs. Stateless operators between two shuffles are fused
 * into the stage's chain — a row goes through all of them in one call, with no queue in between.
 */
export interface StagePlan {
  readonly id: number;
  readonly partitions: number;
  readonly inputs: readonly StageInput[];
  readonly chain: readonly PlannedOperator[];
  readonly output: StageOutput;
}

/** One (stage, partition): the unit that runs on a worker for the life of the query. */
export interface TaskRef {
  /** Global index, stable for the plan: stages in order, partitions in order. */
  readonly index: number;
  readonly stage: number;
  readonly partition: number;
}

export interface PhysicalPlan {
  readonly stages: readonly StagePlan[];
  readonly tasks: readonly TaskRef[];
  readonly sinkStage: number;
}

/** Settings the physical plan depends on, resolved by the driver and passed to every worker. */
export interface PhysicalSettings {
  readonly defaultShufflePartitions: number;
  /** Rows cross every shuffle whole: see {@link keepsWholeRows}. */
  readonly wholeRows: boolean;
}

/**
 * Whether a query may keep a row as it came to a stateful operator — in the late rows
 * (`onLateRow: 'sideOutput'`) or the dead letters (`onBadRecord: 'deadLetter'`): then no shuffle
 * prunes columns (see StageOutput's `columns`).
 */
export function keepsWholeRows(options: Pick<QueryOptions, 'onLateRow' | 'onBadRecord'>): boolean {
  return options.onLateRow === 'sideOutput' || options.onBadRecord === 'deadLetter';
}

interface MutableStage {
  id: number;
  partitions: number;
  inputs: StageInput[];
  chain: PlannedOperator[];
  output: StageOutput | undefined;
}

/**
 * How each node kind shapes stages: a source starts one, a chain operator joins its input's, a
 * shuffle ends its input's stage and starts the next, a keyed stateful operator does the same with
 * an implicit shuffle by its keys and heads the new stage. A new node kind does not compile until
 * it is listed here.
 */
const PLACEMENT: Record<NodeKind, 'source' | 'chain' | 'shuffle' | 'keyed' | 'union' | 'join'> = {
  source: 'source',
  map: 'chain',
  filter: 'chain',
  flatMap: 'chain',
  mapInArrow: 'chain',
  mapPartitions: 'chain',
  select: 'chain',
  withColumn: 'chain',
  watermark: 'chain',
  repartition: 'shuffle',
  aggregate: 'keyed',
  dedup: 'keyed',
  transformWithState: 'keyed',
  union: 'union',
  staticJoin: 'chain',
  streamJoin: 'join',
};

/** A whole row as a key: its JSON text (equal rows, equal text). */
export const rowKey = (row: unknown): string => JSON.stringify(row) ?? '';

/** The shuffle key and partition count of a keyed operator. */
function keyedShuffle(op: PlannedOperator, settings: PhysicalSettings): { key: KeySpec; partitions: number } {
  const node = op.node;
  // Without grouping columns every group meets in one task.
  const global = node.kind === 'aggregate' && node.keys.length === 0;
  return { key: shuffleKey(node), partitions: global ? 1 : settings.defaultShufflePartitions };
}

/**
 * The key a keyed operator's rows are shuffled by, so that every row of one of its keys meets in
 * one task: a `repartition`'s own key; the grouping columns of an aggregation (a constant without
 * any); the columns of a deduplication (the whole row without any); a `groupByKey`'s key.
 */
export function shuffleKey(node: LogicalNode): KeySpec {
  switch (node.kind) {
    case 'repartition':
      return node.key;
    case 'dedup':
      if (node.keys.length === 0) return rowKey;
      return node.keys.length === 1 ? node.keys[0]! : node.keys;
    case 'transformWithState':
      return node.key;
    case 'aggregate':
      if (node.keys.length === 0) return () => 0;
      return node.keys.length === 1 ? node.keys[0]! : node.keys;
    default:
      throw new Error(`internal: ${node.kind} is not keyed`);
  }
}

/**
 * The columns a keyed operator reads from its input, when it reads nothing else of a row (see
 * StageOutput's `columns`), unless the query keeps whole rows ({@link keepsWholeRows}).
 */
function columnsRead(op: PlannedOperator, settings: PhysicalSettings): readonly string[] | null {
  const node = op.node;
  if (node.kind !== 'aggregate' || settings.wholeRows) return null;
  const columns = new Set(node.keys);
  if (node.window !== undefined) columns.add(node.window.column);
  for (const a of node.aggregates) if (a.spec.column !== undefined) columns.add(a.spec.column);
  // A projection is a plain object: a column by that name would set its prototype instead.
  if (columns.has('__proto__')) return null;
  return Object.freeze([...columns]);
}

/**
 * Splits the plan into stages at shuffles. Deterministic: the driver and the workers compute the
 * same stages from the same plan and settings.
 */
export function planPhysical(plan: AnalyzedPlan, settings: PhysicalSettings): PhysicalPlan {
  const stages: MutableStage[] = [];
  const stageOf = new Map<number, MutableStage>();
  const place = (opId: number): MutableStage => {
    const known = stageOf.get(opId);
    if (known) return known;
    const op = plan.operators[opId]!;
    let stage: MutableStage;
    switch (PLACEMENT[op.node.kind]) {
      case 'source': {
        const source = plan.sources.find((s) => s.operatorId === op.id)!;
        stage = newStage(stages, source.spec.partitions, [{ kind: 'source', source }]);
        break;
      }
      case 'chain':
        stage = place(op.inputs[0]!);
        stage.chain.push(op);
        break;
      case 'shuffle': {
        const upstream = place(op.inputs[0]!);
        const node = (op as PlannedOperator<'repartition'>).node;
        stage = newStage(stages, node.partitions ?? settings.defaultShufflePartitions, [
          { kind: 'shuffle', fromStage: upstream.id },
        ]);
        upstream.output = {
          kind: 'shuffle',
          toStage: stage.id,
          key: node.key,
          partitioning: 'hash',
          operator: op,
          columns: null,
        };
        break;
      }
      case 'keyed': {
        const upstream = place(op.inputs[0]!);
        const { key, partitions } = keyedShuffle(op, settings);
        stage = newStage(stages, partitions, [{ kind: 'shuffle', fromStage: upstream.id }]);
        upstream.output = {
          kind: 'shuffle',
          toStage: stage.id,
          key,
          partitioning: 'hash',
          operator: op,
          columns: columnsRead(op, settings),
        };
        stage.chain.push(op);
        break;
      }
      case 'union': {
        const sides = op.inputs.map((i) => place(i));
        stage = newStage(
          stages,
          settings.defaultShufflePartitions,
          sides.map((s) => ({ kind: 'shuffle', fromStage: s.id })),
        );
        for (const side of sides) {
          side.output = {
            kind: 'shuffle',
            toStage: stage.id,
            key: () => 0,
            partitioning: 'forward',
            operator: op,
            columns: null,
          };
        }
        break;
      }
      case 'join': {
        // Both sides are shuffled by the join key into the join's partitions: equal keys of the two
        // sides meet in one task. Stage input 0 is the left side, input 1 the right.
        const node = (op as PlannedOperator<'streamJoin'>).node;
        const key = node.keys.length === 1 ? node.keys[0]! : node.keys;
        const sides = op.inputs.map((i) => place(i));
        stage = newStage(
          stages,
          settings.defaultShufflePartitions,
          sides.map((s) => ({ kind: 'shuffle', fromStage: s.id })),
        );
        for (const side of sides) {
          side.output = {
            kind: 'shuffle',
            toStage: stage.id,
            key,
            partitioning: 'hash',
            operator: op,
            columns: null,
          };
        }
        stage.chain.push(op);
        break;
      }
    }
    stageOf.set(opId, stage);
    return stage;
  };
  const sinkStage = place(plan.rootId);
  sinkStage.output = { kind: 'sink' };
  const frozen = stages.map((s) =>
    Object.freeze({
      id: s.id,
      partitions: s.partitions,
      inputs: Object.freeze(s.inputs),
      chain: Object.freeze(s.chain),
      output: s.output!,
    }),
  );
  const tasks: TaskRef[] = [];
  for (const s of frozen) {
    for (let p = 0; p < s.partitions; p++)
      tasks.push(Object.freeze({ index: tasks.length, stage: s.id, partition: p }));
  }
  return Object.freeze({
    stages: Object.freeze(frozen),
    tasks: Object.freeze(tasks),
    sinkStage: sinkStage.id,
  });
}

function newStage(stages: MutableStage[], partitions: number, inputs: StageInput[]): MutableStage {
  const s: MutableStage = { id: stages.length, partitions, inputs, chain: [], output: undefined };
  stages.push(s);
  return s;
}

/** The watermark inputs whose markers a stage's output carries: those upstream of its operators. */
export function watermarksCarried(plan: AnalyzedPlan, physical: PhysicalPlan, stageId: number): Set<number> {
  const stage = physical.stages[stageId]!;
  const out = new Set<number>();
  for (const op of stage.chain) for (const w of plan.watermarksAbove[op.id]!) out.add(w);
  for (const input of stage.inputs) {
    if (input.kind === 'shuffle')
      for (const w of watermarksCarried(plan, physical, input.fromStage)) out.add(w);
  }
  return out;
}

/**
 * Whether a stage runs a `withWatermark` of its own (not one carried by a source) over rows that
 * come straight from source stages through a shuffle (a `union` or a `repartition` just after
 * the sources): its tasks keep a watermark per source partition, which the source tasks tell
 * whether they are behind (WatermarkTracker).
 */
export function watermarksPerSourcePartition(
  plan: AnalyzedPlan,
  physical: PhysicalPlan,
  stage: StagePlan,
): boolean {
  const runsOne = stage.chain.some((op) =>
    plan.watermarks.some((w) => w.operatorId === op.id && op.node.kind === 'watermark' && !op.node.carried),
  );
  return runsOne && stage.inputs.some((i) => i.kind === 'shuffle' && readsSource(physical, i.fromStage));
}

/** Whether a source stage's rows go straight to a stage that keeps watermarks per source partition. */
export function feedsWatermarksPerSourcePartition(
  plan: AnalyzedPlan,
  physical: PhysicalPlan,
  stage: StagePlan,
): boolean {
  return (
    stage.inputs[0]?.kind === 'source' &&
    stage.output.kind === 'shuffle' &&
    watermarksPerSourcePartition(plan, physical, physical.stages[stage.output.toStage]!)
  );
}

function readsSource(physical: PhysicalPlan, stageId: number): boolean {
  return physical.stages[stageId]!.inputs[0]?.kind === 'source';
}

/** Text form of the physical plan (`q.explain()`). */
export function explain(plan: AnalyzedPlan, physical: PhysicalPlan): string {
  const lines: string[] = [];
  for (const s of physical.stages) {
    const inputs = s.inputs
      .map((i) =>
        i.kind === 'source' ? `source ${i.source.spec.description}` : `shuffle from stage ${i.fromStage}`,
      )
      .join(' + ');
    lines.push(`Stage ${s.id} (${s.partitions} partition${s.partitions === 1 ? '' : 's'}) <- ${inputs}`);
    for (const op of s.chain) lines.push(`  ${describeOperator(op)}`);
    if (s.output.kind === 'shuffle') {
      const columns = s.output.columns === null ? '' : ` (columns ${s.output.columns.join(', ')})`;
      lines.push(`  -> hash shuffle by ${describeKey(s.output.key)} to stage ${s.output.toStage}${columns}`);
    } else {
      lines.push(`  -> sink ${plan.definition.sink.description} (${plan.definition.outputMode})`);
    }
  }
  return lines.join('\n');
}

export function describeKey(key: KeySpec): string {
  if (typeof key === 'string') return key;
  if (typeof key === 'function') return key.name ? `${key.name}(row)` : '<function>';
  return `(${key.join(', ')})`;
}

/** Whether a node runs Arrow code on batches of rows (mapInArrow, or a projection with an Arrow UDF). */
export function runsArrowCode(node: LogicalNode): boolean {
  if (node.kind === 'mapInArrow') return true;
  if (node.kind === 'withColumn') return isArrowUdf(node.expr);
  if (node.kind === 'select') return node.columns.some((c) => isArrowUdf(c.expr));
  return false;
}

/**
 * Whether a node's Arrow code runs on the query's UDF threads: it or one of its Arrow UDFs says
 * `isolate`, or the query does (`isolateUdfs`). Otherwise it runs on the task's own thread.
 */
export function runsOnUdfThreads(node: LogicalNode, isolateUdfs: boolean): boolean {
  if (!runsArrowCode(node)) return false;
  if (isolateUdfs) return true;
  if (node.kind === 'mapInArrow') return node.isolate === true;
  const exprs =
    node.kind === 'withColumn' ? [node.expr] : node.kind === 'select' ? node.columns.map((c) => c.expr) : [];
  return exprs.some((e) => isArrowUdf(e) && e.isolate === true);
}

const isArrowUdf = (e: unknown): e is { kind: 'arrowUdf'; isolate?: true } =>
  typeof e === 'object' && e !== null && (e as { kind?: unknown }).kind === 'arrowUdf';
