import { mkdir } from 'node:fs/promises';
import type { SinkRecordFields } from '../connectors/contract.js';
import { sinkConnector } from '../connectors/registry.js';
import { ErrorCode, MillraceError } from '../errors.js';
import type { AnalyzedPlan } from '../plan/analyze.js';
import { statefulOperators } from '../plan/analyze.js';
import { planFingerprint } from '../plan/fingerprint.js';
import type { PhysicalPlan } from '../plan/physical.js';
import { readCheckedIfExists, writeFileAtomic } from './files.js';
import type { CheckpointLayout } from './layout.js';

/** A source as the checkpoint knows it. */
export interface SourceRecord {
  readonly index: number;
  readonly name: string | null;
  readonly kind: string;
  readonly partitions: number;
}

/**
 * A stateful operator as the checkpoint knows it: its state's shape (the state schema: grouping
 * keys, window and aggregations, or deduplication keys) and how its state is split.
 */
export interface StatefulRecord {
  /**
   * The id its state is kept under (`state/<operatorId>/`): the operator's id in the plan that
   * created the checkpoint. A later plan may number it differently (a filter added upstream);
   * its state stays here.
   */
  readonly operatorId: number;
  readonly kind: string;
  readonly description: unknown;
  /** State partitions: the state is split by key hash over this many (absent in older metadata). */
  readonly partitions?: number;
}

/** The sink as the checkpoint knows it: its kind, and what its connector records (a files sink's `path`). */
export interface SinkRecord extends SinkRecordFields {
  readonly kind: string;
}

/** What a checkpoint remembers of the query that wrote it (`metadata`). */
export interface CheckpointMetadata {
  readonly id: string;
  readonly formatVersion: 1;
  readonly createdAt: number;
  readonly offsetLogFormat: 'v1' | 'v2';
  readonly sources: readonly SourceRecord[];
  /** Names of sources removed from the query (v2): they can never come back. */
  readonly retiredSources: readonly string[];
  readonly stateful: readonly StatefulRecord[];
  /**
   * The event-time column of each watermark input, in plan order: a commit's watermark values are
   * restored by position (absent in older metadata).
   */
  readonly watermarks?: readonly string[];
  readonly sink: SinkRecord;
  /** The plan's shape (user code excluded), rewritten when a run changes the plan. */
  readonly fingerprint: string;
}

export interface DescribeOptions {
  readonly id: string;
  readonly format: 'v1' | 'v2';
  readonly retired: readonly string[];
  /** The physical plan, for the stateful operators' state partitions. */
  readonly physical?: PhysicalPlan;
}

/** The metadata a plan would write. */
export function describePlan(plan: AnalyzedPlan, options: DescribeOptions): CheckpointMetadata {
  const { id, format, retired, physical } = options;
  const sink = plan.definition.sink;
  return {
    id,
    formatVersion: 1,
    createdAt: Date.now(),
    offsetLogFormat: format,
    sources: plan.sources.map((s) => ({
      index: s.index,
      name: s.spec.name ?? null,
      kind: s.spec.kind,
      partitions: s.spec.partitions,
    })),
    retiredSources: [...retired],
    stateful: statefulOperators(plan).map((op) => {
      // A keyed stateful operator heads its stage (physical.ts): the stage's partitions are its state's.
      const partitions = physical?.stages.find((s) => s.chain[0]?.id === op.id)?.partitions;
      return {
        operatorId: op.id,
        kind: op.node.kind,
        description: describeStateful(op.node),
        ...(partitions === undefined ? {} : { partitions }),
      };
    }),
    watermarks: plan.watermarks.map((w) => w.column),
    sink: { kind: sink.kind, ...sinkConnector(sink).record?.(sink) },
    fingerprint: planFingerprint(plan, false),
  };
}

function describeStateful(node: AnalyzedPlan['operators'][number]['node']): unknown {
  switch (node.kind) {
    case 'aggregate':
      return {
        keys: node.keys,
        window: node.window ?? null,
        aggregates: node.aggregates.map((a) => [a.name, a.spec.description]),
      };
    case 'dedup':
      return { keys: node.keys, withinWatermark: node.withinWatermark };
    case 'transformWithState':
      return { timeMode: node.timeMode, states: node.states.map((d) => [d.name, d.kind, d.ttlMs]) };
    case 'streamJoin':
      return { keys: node.keys, type: node.type, range: node.range };
    default:
      return null;
  }
}

export async function readMetadata(layout: CheckpointLayout): Promise<CheckpointMetadata | undefined> {
  const bytes = await readCheckedIfExists(layout.metadata);
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(bytes.toString()) as CheckpointMetadata;
  } catch (e) {
    throw new MillraceError(
      ErrorCode.CHECKPOINT_CORRUPT,
      `checkpoint file ${layout.metadata} is corrupt: ${(e as Error).message}`,
    );
  }
}

export async function writeMetadata(layout: CheckpointLayout, metadata: CheckpointMetadata): Promise<void> {
  await mkdir(layout.root, { recursive: true });
  await writeFileAtomic(layout.metadata, Buffer.from(JSON.stringify(metadata)));
}
