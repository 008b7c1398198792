import type { SourceSpec } from '../connectors/spec.js';
import type { AggregateSpec } from './aggregates.js';
import type { ColumnExpr } from './expressions.js';
import type { JoinCombine, JoinType, StaticTable } from './join.js';
import type {
  ProcessorSource,
  StateDeclaration,
  TimeMode,
  TransformWithStateOptions,
} from './stateful-processor.js';
import type { AnyWindow } from './window.js';

/**
 * Frozen logical plan nodes, tagged by `kind`. Builders create them; passes (analysis, physical
 * planning, operator factories, explain) switch on `kind` through `Record<NodeKind, ...>` tables,
 * so a new kind does not compile until every pass handles it.
 */
export type LogicalNode =
  | SourceNode
  | MapNode
  | FilterNode
  | FlatMapNode
  | MapInArrowNode
  | MapPartitionsNode
  | SelectNode
  | WithColumnNode
  | RepartitionNode
  | WatermarkNode
  | AggregateNode
  | DedupNode
  | TransformWithStateNode
  | UnionNode
  | StaticJoinNode
  | StreamJoinNode;

export type NodeKind = LogicalNode['kind'];

/** Extracts the node type of a kind. */
export type NodeOf<K extends NodeKind> = Extract<LogicalNode, { kind: K }>;

/** A key: a column name, several column names, or a function of the row. */
export type KeySpec = string | readonly string[] | ((row: any) => unknown);

interface Labelled {
  /** Optional label shown in plans and errors. */
  readonly label: string | undefined;
}

export interface SourceNode extends Labelled {
  readonly kind: 'source';
  readonly source: SourceSpec;
}

export interface MapNode extends Labelled {
  readonly kind: 'map';
  readonly input: LogicalNode;
  readonly fn: (row: any) => unknown;
}

export interface FilterNode extends Labelled {
  readonly kind: 'filter';
  readonly input: LogicalNode;
  readonly fn: (row: any) => unknown;
}

export interface FlatMapNode extends Labelled {
  readonly kind: 'flatMap';
  readonly input: LogicalNode;
  readonly fn: (row: any) => Iterable<unknown> | null | undefined;
}

/**
 * `mapInArrow(fn)`: each Arrow batch of the rows goes to `fn`, which returns a batch, a table or
 * an iterable of them (any number of rows). Runs on the UDF threads.
 */
export interface MapInArrowNode extends Labelled {
  readonly kind: 'mapInArrow';
  readonly input: LogicalNode;
  readonly fn: (batch: any) => unknown;
  /** Rows per batch at most (undefined: the query's `arrowMaxRecordsPerBatch`). */
  readonly maxRecordsPerBatch: number | undefined;
  /** Set (true) when it runs on the UDF threads. */
  readonly isolate?: true;
}

/**
 * `mapPartitions(fn)`: the rows a partition receives in one trigger, as one iterable, to `fn`;
 * its output goes on when the trigger's batch ends. Micro-batch mode only: it holds all its rows.
 */
export interface MapPartitionsNode extends Labelled {
  readonly kind: 'mapPartitions';
  readonly input: LogicalNode;
  readonly fn: (rows: Iterable<any>) => Iterable<unknown> | null | undefined;
}

export interface SelectNode extends Labelled {
  readonly kind: 'select';
  readonly input: LogicalNode;
  readonly columns: readonly { readonly name: string; readonly expr: ColumnExpr }[];
}

export interface WithColumnNode extends Labelled {
  readonly kind: 'withColumn';
  readonly input: LogicalNode;
  readonly column: string;
  readonly expr: ColumnExpr;
}

export interface RepartitionNode extends Labelled {
  readonly kind: 'repartition';
  readonly input: LogicalNode;
  readonly key: KeySpec;
  /** Partitions of the next stage; the query's shufflePartitions when undefined. */
  readonly partitions: number | undefined;
}

/** Declares `column` as the event time of this stream, with rows up to `delayMs` late accepted. */
export interface WatermarkNode extends Labelled {
  readonly kind: 'watermark';
  readonly input: LogicalNode;
  readonly column: string;
  readonly delayMs: number;
  /** An input that has seen no row this long after the start is left out of the minimum. */
  readonly idleTimeoutMs: number | undefined;
  /**
   * The watermark is the one its source carries (a group's repartition topic, docs/scale-out.md),
   * not made from the rows' event times: set by the plan's cut only.
   */
  readonly carried?: boolean;
}

/** `groupBy(keys..., window?).agg({...})`: a keyed, stateful aggregation. */
export interface AggregateNode extends Labelled {
  readonly kind: 'aggregate';
  readonly input: LogicalNode;
  /** Grouping columns, in groupBy order (the window excluded). */
  readonly keys: readonly string[];
  readonly window: AnyWindow | undefined;
  /** Output fields, in order. */
  readonly aggregates: readonly { readonly name: string; readonly spec: AggregateSpec }[];
}

/**
 * `dropDuplicates(columns)` / `dropDuplicatesWithinWatermark(columns)`: passes the first row of
 * each key on. No columns: the whole row is the key.
 */
export interface DedupNode extends Labelled {
  readonly kind: 'dedup';
  readonly input: LogicalNode;
  readonly keys: readonly string[];
  /** Forget a key once the watermark passes its first row's event time plus the delay. */
  readonly withinWatermark: boolean;
}

/** `groupByKey(key).transformWithState(processor, options)`: user state and timers per key. */
export interface TransformWithStateNode extends Labelled {
  readonly kind: 'transformWithState';
  readonly input: LogicalNode;
  readonly key: (row: any) => unknown;
  readonly processor: ProcessorSource<any, any, any, any>;
  readonly timeMode: TimeMode;
  readonly outputMode: 'append' | 'update';
  readonly timerFiring: 'onArrival' | 'wallClock';
  /** The output rows' event-time column, carrying the watermark on; undefined: none. */
  readonly eventTimeColumn: string | undefined;
  readonly initialState: TransformWithStateOptions<unknown, unknown>['initialState'];
  /** The state variables its processor declares in `init` (the state schema). */
  readonly states: readonly StateDeclaration[];
}

/** `union(other)`: the rows of two streams of different sources, as one stream. */
export interface UnionNode extends Labelled {
  readonly kind: 'union';
  readonly input: LogicalNode;
  readonly other: LogicalNode;
}

/**
 * `stream.join(table, ...)`: each stream row joined with the rows of a static table that have the
 * same key. Stateless with respect to the stream: the table is loaded and indexed once per worker.
 */
export interface StaticJoinNode extends Labelled {
  readonly kind: 'staticJoin';
  readonly input: LogicalNode;
  readonly table: StaticTable;
  /** Key columns, present under the same names on both sides. */
  readonly keys: readonly string[];
  readonly type: 'inner' | 'leftOuter';
  /** Builds the output row; `mergeRows` when undefined. */
  readonly combine: JoinCombine | undefined;
}

/**
 * `left.join(right, ...)` of two streams: pairs with equal keys whose event times satisfy
 * `right time ∈ [left time + lowerMs, left time + upperMs]`. Both sides are buffered in state until
 * the watermark makes a match impossible.
 */
export interface StreamJoinNode extends Labelled {
  readonly kind: 'streamJoin';
  readonly input: LogicalNode;
  readonly other: LogicalNode;
  readonly keys: readonly string[];
  readonly type: JoinType;
  readonly range: {
    readonly leftColumn: string;
    readonly rightColumn: string;
    readonly lowerMs: number;
    readonly upperMs: number;
  };
  readonly combine: JoinCombine | undefined;
}

/** Node kinds that keep state across rows. */
export const STATEFUL_KINDS: readonly NodeKind[] = ['aggregate', 'dedup', 'transformWithState', 'streamJoin'];

/** Node kinds with two inputs (`input`, then `other`). */
export const TWO_INPUT_KINDS: readonly NodeKind[] = ['union', 'streamJoin'];

/** The inputs of a node, in order. */
export function nodeInputs(node: LogicalNode): readonly LogicalNode[] {
  if (node.kind === 'source') return [];
  if (node.kind === 'union' || node.kind === 'streamJoin') return [node.input, node.other];
  return [node.input];
}
