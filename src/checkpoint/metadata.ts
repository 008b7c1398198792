import { mkdir } from 'node:fs/promises';
import { ErrorCode, MillraceError } from '../errors.js';
import type { AnalyzedPlan } from '../plan/analyze.js';
import { statefulOperators } from '../plan/analyze.js';
import { planFingerprint } from '../plan/fingerprint.js';
import { readCheckedIfExists, writeFileAtomic } from './files.js';
import type { CheckpointLayout } from './layout.js';

/** A source as the checkpoint knows it. */
export interface SourceRecord {
  readonly index: number;
  readonly name: string | null;
  readonly kind: string;
  readonly partitions: number;
}

/** A stateful operator as the checkpoint knows it (its state's shape). */
export interface StatefulRecord {
  readonly operatorId: number;
  readonly kind: string;
  readonly description: unknown;
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
  readonly sink: { readonly kind: string };
  /** The plan's shape (user code excluded). */
  readonly fingerprint: string;
}

/** The metadata a plan would write. */
export function describePlan(
  plan: AnalyzedPlan,
  id: string,
  format: 'v1' | 'v2',
  retired: readonly string[],
): CheckpointMetadata {
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
    stateful: statefulOperators(plan).map((op) => ({
      operatorId: op.id,
      kind: op.node.kind,
      description: describeStateful(op.node),
    })),
    sink: { kind: plan.definition.sink.kind },
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
