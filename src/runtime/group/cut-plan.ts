import { sourceConnector } from '../../connectors/registry.js';
import type { SourceSpec } from '../../connectors/spec.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { QueryDefinition } from '../../plan/job.js';
import {
  type KeySpec,
  type LogicalNode,
  nodeInputs,
  STATEFUL_KINDS,
  type WatermarkNode,
} from '../../plan/nodes.js';
import { keyHasher, partitionOf } from '../../plan/partitioner.js';
import { shuffleKey } from '../../plan/physical.js';

/**
 * Which half of a cut plan a group task runs (docs/scale-out.md, "Cutting the plan"), told to the
 * driver and every worker of the task, which all build the job and then cut it alike: stage 0
 * runs the plan below its first keyed operator and writes each row to the partition of its key in
 * the repartition topic; stage 1 reads partition `task` of that topic and runs the rest.
 */
export interface PlanCut {
  readonly stage: 0 | 1;
  readonly topic: string;
  readonly partitions: number;
  readonly task: number;
}

/** Where a plan is cut: its first keyed operator from the sources, and what lies below it. */
export interface CutPoint {
  /** The keyed operator (or `repartition`) whose input crosses between processes. */
  readonly keyed: LogicalNode;
  readonly key: KeySpec;
  /** The source below the cut (exactly one). */
  readonly source: SourceSpec;
  /** The watermark declared below the cut, nearest to it, declared again above it. */
  readonly watermark: WatermarkNode | undefined;
  /** Its watermark input in the plan below the cut (null: none). */
  readonly watermarkInput: number | null;
}

const KEYED = [...STATEFUL_KINDS, 'repartition'];

const refuse = (why: string) => new MillraceError(ErrorCode.UNSUPPORTED_OPERATION, `a group run ${why}`);

/**
 * Finds where a group run cuts the plan, or null when no operator needs every row of a key in one
 * place (each task then runs the whole plan over its partitions). Refuses what one cut cannot
 * carry: two streams (a union or a join) under a keyed operator, and a second keyed operator over
 * other keys above the first.
 */
export function findCut(definition: QueryDefinition): CutPoint | null {
  const chain: LogicalNode[] = [];
  for (let node: LogicalNode | undefined = definition.root; node !== undefined; ) {
    const inputs = nodeInputs(node);
    if (inputs.length > 1) {
      if (chain.some((n) => KEYED.includes(n.kind)) || keyedAtOrBelow(node)) {
        throw refuse(
          `cuts its plan at a keyed operator into two stages, and ${node.kind} reads two streams below one; ` +
            'a group runs keyed operators over a single stream for now (docs/scale-out.md)',
        );
      }
      return null;
    }
    chain.push(node);
    node = inputs[0];
  }
  // chain runs from the sink's side down to the source.
  const at = chain.findLastIndex((n) => KEYED.includes(n.kind));
  if (at < 0) return null;
  const keyed = chain[at]!;
  const key = shuffleKey(keyed);
  for (const above of chain.slice(0, at)) {
    if (KEYED.includes(above.kind) && !sameKey(shuffleKey(above), key)) {
      throw refuse(
        `cuts its plan once, at its first keyed operator (${keyed.kind}), and ${above.kind} above it is keyed ` +
          'by other columns: that needs a second repartition topic, not built yet (docs/scale-out.md)',
      );
    }
  }
  const below = chain.slice(at + 1);
  const source = below.at(-1);
  if (source?.kind !== 'source') throw new Error('internal: a plan chain ends at its source');
  const watermark = below.find((n): n is WatermarkNode => n.kind === 'watermark');
  // Inputs are numbered from the source up: the watermark nearest to the cut is the last.
  const watermarks = below.filter((n) => n.kind === 'watermark').length;
  return {
    keyed,
    key,
    source: source.source,
    watermark,
    watermarkInput: watermarks > 0 ? watermarks - 1 : null,
  };
}

const keyedAtOrBelow = (node: LogicalNode): boolean =>
  KEYED.includes(node.kind) || nodeInputs(node).some(keyedAtOrBelow);

/** Keys that put the same rows together: the same columns, or the same function. */
function sameKey(a: KeySpec, b: KeySpec): boolean {
  if (typeof a === 'function' || typeof b === 'function') return a === b;
  return JSON.stringify([a].flat()) === JSON.stringify([b].flat());
}

/** The name of the repartition topic of a group's query (one cut: stage 1's input). */
export function repartitionTopic(queryId: string): string {
  return `millrace-${queryId}-stage-1-repartition`;
}

/** Rebuilds a frozen node with another input. */
const withInput = (node: LogicalNode, input: LogicalNode): LogicalNode =>
  Object.freeze({ ...node, input }) as LogicalNode;

/** The half of the job's plan a task runs. */
export function cutPlan(definition: QueryDefinition, cut: PlanCut): QueryDefinition {
  const point = findCut(definition);
  if (point === null) return definition;
  const share = sourceConnector(point.source).group;
  if (share === undefined) throw new Error('internal: a cut plan reads a source a group shares');
  const ends = share.repartition(point.source, {
    topic: cut.topic,
    partitions: cut.partitions,
    task: cut.task,
    sink: definition.sink,
    watermarkInput: point.watermarkInput,
    watermarkIdleMs: point.watermark?.idleTimeoutMs,
  });
  const { keyed } = point;
  if (cut.stage === 0) {
    const hash = keyHasher(point.key);
    const n = cut.partitions;
    const route: LogicalNode = Object.freeze({
      kind: 'map',
      label: `repartition to ${cut.topic}`,
      input: nodeInputs(keyed)[0]!,
      fn: (row: unknown) => ({ value: row, partition: partitionOf(hash(row), n) }),
    });
    return Object.freeze({ ...definition, root: route, sink: ends.sink, outputMode: 'append' });
  }
  let input: LogicalNode = Object.freeze({ kind: 'source', label: undefined, source: ends.source });
  // The watermark below the cut is declared again, carried by the topic's watermark records.
  if (point.watermark !== undefined) {
    input = Object.freeze({ ...point.watermark, input, carried: true }) as LogicalNode;
  }
  // A `repartition` is done by the topic; a keyed operator reads it.
  let node = keyed.kind === 'repartition' ? input : withInput(keyed, input);
  const above: LogicalNode[] = [];
  for (let n = definition.root; n !== keyed; n = nodeInputs(n)[0]!) above.push(n);
  for (const n of above.reverse()) node = withInput(n, node);
  return Object.freeze({ ...definition, root: node });
}
