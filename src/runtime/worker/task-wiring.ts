import { StateCheckpointer } from '../../checkpoint/state-checkpointer.js';
import type { RowSink, StatefulOperator } from '../../operators/contract.js';
import { hasTwoInputs } from '../../operators/contract.js';
import type { AnalyzedPlan } from '../../plan/analyze.js';
import {
  type PhysicalPlan,
  type StagePlan,
  watermarksCarried,
  watermarksPerSourcePartition,
} from '../../plan/physical.js';
import { FrameKind } from '../channel/frame-kind.js';
import type { HostContext } from './host-context.js';
import { WatermarkTracker } from './watermark-tracker.js';

/**
 * Where each input channel of a task leads, and what its watermark markers mean. Channels come in
 * stage-input order (wiring.ts): a source input has one, a shuffle input one per upstream
 * partition. A row goes to the chain's head, or to its side of a two-input operator.
 */
export function wireInputs(
  plan: AnalyzedPlan,
  physical: PhysicalPlan,
  stage: StagePlan,
  head: RowSink,
  stateful: StatefulOperator | null,
  host: HostContext,
): {
  heads: RowSink[];
  watermarks: WatermarkTracker;
  /** Source index << 16 | partition → the input channel its rows come on (see below). */
  partitionChannels: Map<number, number> | null;
} {
  const sides = stateful !== null && hasTwoInputs(stateful) ? stateful.inputs : null;
  const heads: RowSink[] = [];
  // For each watermark input, the channels that relay its markers (see WatermarkTracker). A
  // producer that runs the watermark operator sends its own partition's values: not a relay.
  const carriers: number[][] = plan.watermarks.map(() => []);
  // For each watermark input, the channels from the tasks that run its watermark operator: each
  // speaks for its own source partition.
  const producers: number[][] = plan.watermarks.map(() => []);
  // A task that runs a watermark operator over rows straight from source tasks keeps a value per
  // source partition: each channel from a source task is a producer of its own input, told of
  // its partition's backlog by BACKLOG markers (real-time mode).
  const perPartition = !host.microBatch && watermarksPerSourcePartition(plan, physical, stage);
  const own = plan.watermarks
    .filter((w) => stage.chain.some((op) => op.id === w.operatorId))
    .map((w) => w.index);
  const partitionChannels = perPartition ? new Map<number, number>() : null;
  for (const [i, input] of stage.inputs.entries()) {
    const from = input.kind === 'source' ? null : physical.stages[input.fromStage]!;
    const carried = from === null ? [] : [...watermarksCarried(plan, physical, from.id)];
    const runs = (w: number) => from!.chain.some((op) => op.id === plan.watermarks[w]!.operatorId);
    const relayed = carried.filter((w) => !runs(w));
    const produced = carried.filter(runs);
    const rings = from === null ? 1 : from.partitions;
    const source = from?.inputs[0]?.kind === 'source' ? from.inputs[0].source.index : -1;
    for (let r = 0; r < rings; r++) {
      for (const w of relayed) carriers[w]!.push(heads.length);
      for (const w of produced) producers[w]!.push(heads.length);
      if (partitionChannels !== null && source >= 0) {
        // Task r of a source stage reads partition r of its source.
        partitionChannels.set((source << 16) | r, heads.length);
        for (const w of own) producers[w]!.push(heads.length);
      }
      heads.push(sides?.[i] ?? head);
    }
  }
  const watermarks = new WatermarkTracker(
    plan.watermarks.length,
    stateful === null ? [] : plan.watermarksAbove[stage.chain[0]!.id]!,
    host.multipleWatermarkPolicy,
    host.microBatch,
    plan.watermarks.map((w) => w.idleTimeoutMs),
    carriers,
    heads.length,
    stateful === null ? 0 : plan.watermarkLags[stage.chain[0]!.id]!,
    producers,
  );
  watermarks.restore(host.initialWatermarks, host.initialLateWatermark);
  return { heads, watermarks, partitionChannels };
}

/**
 * Restores a stateful operator's state (a resumed run) and writes it at every epoch's end from
 * then on; the driver hears of each durable version on the host's result ring.
 */
export function openStateCheckpointer(
  stateful: StatefulOperator,
  operatorId: number,
  task: { readonly index: number; readonly partition: number },
  host: HostContext,
  failed: (e: unknown) => void,
): StateCheckpointer {
  const spec = host.state!;
  const checkpointer = new StateCheckpointer(
    stateful.store,
    spec.root,
    // The checkpoint keeps the state under the operator's id when it was created.
    spec.stateIds?.[operatorId] ?? operatorId,
    task.partition,
    spec.minDeltasForSnapshot,
    {
      durable: (epoch) => {
        host.result.writeMarker(FrameKind.STATE_WRITTEN, epoch, task.index);
        host.result.publish();
      },
      failed: (e) => {
        failed(e);
        host.bells.ringAlways(host.bell);
      },
    },
  );
  if (spec.restoreVersion > 0) {
    // Real-time mode: an operator that can takes its state lazily, a key group when a row needs it.
    checkpointer.restore(spec.restoreVersion, !host.microBatch && stateful.restoresLazily === true);
    stateful.restored();
  }
  return checkpointer;
}
