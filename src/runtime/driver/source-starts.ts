import type { CheckpointManager, RecoveryPoint } from '../../checkpoint/manager.js';
import { sourceConnector } from '../../connectors/registry.js';
import type { AnalyzedPlan } from '../../plan/analyze.js';

/**
 * Where each source starts on a first run, for sources that decide it from outside (their
 * connector's `startOffsets`: a subscription's `latest`). A checkpoint with a committed epoch says
 * where every source resumes, and nothing is asked; before that, each such source resolves its
 * start once and records it in its checkpoint directory, so a first run that dies before its first
 * commit starts again from the same offsets. Returns the recovery point with those offsets (a fresh
 * one for a query without a checkpoint).
 */
export async function withSourceStarts(
  plan: AnalyzedPlan,
  checkpoint: CheckpointManager | null,
  recovery: RecoveryPoint | null,
  queryId: string,
): Promise<RecoveryPoint | null> {
  const deciding = plan.sources.filter((s) => sourceConnector(s.spec).startOffsets !== undefined);
  if (deciding.length === 0 || (recovery !== null && recovery.committedEpoch >= 0)) return recovery;
  const startOffsets = plan.sources.map((s, i) => [
    ...(recovery?.startOffsets[i] ?? new Array<number>(s.spec.partitions).fill(0)),
  ]);
  for (const s of deciding) {
    const dir = checkpoint === null ? null : checkpoint.sourceDir(s.index);
    startOffsets[s.index] = await sourceConnector(s.spec).startOffsets!(s.spec, dir);
  }
  if (recovery !== null) return { ...recovery, startOffsets };
  return {
    queryId,
    committedEpoch: -1,
    nextEpoch: 0,
    startOffsets,
    watermarks: plan.watermarks.map(() => Number.NEGATIVE_INFINITY),
    nextBatchWatermarkMs: 0,
    lateWatermarkMs: Number.NEGATIVE_INFINITY,
    redo: null,
    scheduleStarts: plan.sources.map(() => null),
    stateIds: {},
  };
}
