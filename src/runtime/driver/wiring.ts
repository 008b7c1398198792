import { type PhysicalPlan, runsOnUdfThreads } from '../../plan/physical.js';
import { DRIVER_BELL } from '../channel/doorbell.js';
import { createRing } from '../channel/spsc-ring.js';
import type { TaskSpec, UdfChannelSpec } from '../messages.js';

/** Which host runs each task, and every ring of the query with its two ends' doorbells. */
export interface Wiring {
  readonly hosts: readonly HostWiring[];
  /** Host index of each task. */
  readonly taskHost: readonly number[];
  /** Driver → source task rings (memory rows, and markers for every source), by task index. */
  readonly feeds: ReadonlyMap<number, SharedArrayBuffer>;
  /** The UDF pool's threads and the channels each serves (none when no operator runs there). */
  readonly udfWorkers: readonly UdfWorkerWiring[];
}

export interface UdfWorkerWiring {
  readonly index: number;
  readonly bell: number;
  readonly channels: readonly (UdfChannelSpec & { readonly task: number })[];
}

/**
 * A UDF channel's rings hold the batches a task sends ahead and their answers, and are at least
 * this large, so that a batch of 10 000 rows of a few numeric columns fits one frame (a larger
 * batch is sent in parts).
 */
const MIN_UDF_RING_BYTES = 8 << 20;

export interface HostWiring {
  readonly index: number;
  readonly bell: number;
  readonly tasks: readonly TaskSpec[];
  /** Host → driver ring. */
  readonly resultRing: SharedArrayBuffer;
}

export function bellOfHost(host: number): number {
  return host + 1;
}

/**
 * Places tasks on hosts round-robin in task order (so the partitions of a stage spread over the
 * threads) and creates the rings: one per (upstream task, downstream task) pair of every shuffle,
 * one feed ring per source task, one result ring per host.
 */
export function wire(
  physical: PhysicalPlan,
  hosts: number,
  ringCapacity: number,
  udfThreads = 1,
  isolateUdfs = false,
): Wiring {
  const taskHost = physical.tasks.map((t) => t.index % hosts);
  const firstTask = physical.stages.map((s) => physical.tasks.findIndex((t) => t.stage === s.id));
  const inputs = physical.tasks.map(() => [] as SharedArrayBuffer[]);
  const outputs = physical.tasks.map(() => [] as SharedArrayBuffer[]);
  const feeds = new Map<number, SharedArrayBuffer>();
  for (const stage of physical.stages) {
    for (const input of stage.inputs) {
      if (input.kind === 'source') {
        for (let p = 0; p < stage.partitions; p++) {
          const t = firstTask[stage.id]! + p;
          const ring = createRing(ringCapacity, bellOfHost(taskHost[t]!), DRIVER_BELL);
          feeds.set(t, ring);
          inputs[t]!.push(ring);
        }
      } else {
        const from = physical.stages[input.fromStage]!;
        for (let a = 0; a < from.partitions; a++) {
          const producer = firstTask[from.id]! + a;
          for (let b = 0; b < stage.partitions; b++) {
            const consumer = firstTask[stage.id]! + b;
            const ring = createRing(
              ringCapacity,
              bellOfHost(taskHost[consumer]!),
              bellOfHost(taskHost[producer]!),
            );
            outputs[producer]!.push(ring);
            inputs[consumer]!.push(ring);
          }
        }
      }
    }
  }
  // Each operator of each task that runs on UDF threads gets a channel (the others run their Arrow
  // code on the task's thread); channels are dealt to the
  // UDF threads round-robin. Their doorbells come after the hosts'.
  const udf = physical.tasks.map(() => [] as UdfChannelSpec[]);
  const udfChannels: (UdfChannelSpec & { task: number })[] = [];
  for (const t of physical.tasks) {
    for (const op of physical.stages[t.stage]!.chain) {
      if (!runsOnUdfThreads(op.node, isolateUdfs)) continue;
      udfChannels.push({ task: t.index, operatorId: op.id, request: null!, response: null! });
    }
  }
  const udfCount = Math.min(udfThreads, udfChannels.length);
  const udfRingBytes = Math.max(ringCapacity, MIN_UDF_RING_BYTES);
  const udfWorkers = Array.from({ length: udfCount }, (_, u) => ({
    index: u,
    bell: bellOfHost(hosts + u),
    channels: [] as (UdfChannelSpec & { task: number })[],
  }));
  udfChannels.forEach((c, i) => {
    const worker = udfWorkers[i % udfCount]!;
    const host = bellOfHost(taskHost[c.task]!);
    const channel = {
      task: c.task,
      operatorId: c.operatorId,
      request: createRing(udfRingBytes, worker.bell, host),
      response: createRing(udfRingBytes, host, worker.bell),
    };
    worker.channels.push(channel);
    udf[c.task]!.push({ operatorId: c.operatorId, request: channel.request, response: channel.response });
  });
  const hostWiring: HostWiring[] = [];
  for (let h = 0; h < hosts; h++) {
    hostWiring.push({
      index: h,
      bell: bellOfHost(h),
      tasks: physical.tasks
        .filter((t) => taskHost[t.index] === h)
        .map((t) => ({
          index: t.index,
          stage: t.stage,
          partition: t.partition,
          inputs: inputs[t.index]!,
          outputs: outputs[t.index]!,
          ...(udf[t.index]!.length > 0 ? { udf: udf[t.index]! } : {}),
        })),
      resultRing: createRing(ringCapacity, DRIVER_BELL, bellOfHost(h)),
    });
  }
  return { hosts: hostWiring, taskHost, feeds, udfWorkers };
}
