import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { resourceLimits } from 'node:worker_threads';
import { ErrorCode, MillraceError, serializeError } from '../../errors.js';
import { TaskFailure } from './row-problems.js';

/** The share of its heap limit a worker thread running stateful tasks may hold after a full collection. */
export const HEAP_SHARE = 0.8;

/** What one stateful task holds: its operator (as errors name it) and its `memoryUsedBytes`. */
export interface TaskState {
  readonly operator: string;
  readonly stage: number;
  readonly partition: number;
  readonly bytes: number;
}

/**
 * The limits on the state the stateful tasks of one worker thread hold, so that a query whose
 * state outgrows memory fails with STATE_MEMORY_EXCEEDED, naming its largest operator, instead of
 * the thread dying of heap exhaustion with nothing said:
 *
 * - the query's `stateMemoryLimitBytes`, against the operators' own count (`memoryUsedBytes`);
 * - always (unless that option is `Infinity`): the thread's old generation, as a full collection
 *   leaves it, against {@link HEAP_SHARE} of its limit (`--max-old-space-size`).
 *   What a collection leaves is what is alive; the state is most of it in a stateful task.
 */
export class StateMemoryLimit {
  private readonly heapLimit: number;
  /** The old generation's limit, and what it held after the last full collection (0 before one). */
  private heapAfterGc = 0;
  private observer: PerformanceObserver | null = null;

  constructor(private readonly configured: number | undefined) {
    // V8's heap limit counts the young generation at its largest (48 MiB on Node 20, 192 MiB on
    // Node 24, as the thread's resource limits say); what runs out is the old generation, the rest.
    const young = (resourceLimits.maxYoungGenerationSizeMb ?? 48) * 2 ** 20;
    this.heapLimit = Math.max(getHeapStatistics().heap_size_limit - young, 2 ** 24);
  }

  /** Starts watching full collections (a host with stateful tasks). */
  watch(): void {
    if (this.observer !== null || this.configured === Number.POSITIVE_INFINITY) return;
    this.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
        if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) this.heapAfterGc = oldGenerationUsed();
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  close(): void {
    this.observer?.disconnect();
    this.observer = null;
  }

  /** Throws STATE_MEMORY_EXCEEDED (as the failure of the task holding the most) if a limit is passed. */
  check(tasks: readonly TaskState[]): void {
    const error = this.exceeded(tasks);
    if (error === null) return;
    const largest = tasks.reduce((a, b) => (b.bytes > a.bytes ? b : a));
    throw new TaskFailure(serializeError(error, { stage: largest.stage, partition: largest.partition }));
  }

  /** The error for what the tasks hold, if a limit is passed; null otherwise. */
  exceeded(tasks: readonly TaskState[]): MillraceError | null {
    if (tasks.length === 0) return null;
    let total = 0;
    let largest = tasks[0]!;
    for (const t of tasks) {
      total += t.bytes;
      if (t.bytes > largest.bytes) largest = t;
    }
    const holds =
      `${largest.operator} (partition ${largest.partition}) holds ${mib(largest.bytes)} of state` +
      (tasks.length === 1 ? '' : ` (this worker's ${tasks.length} stateful tasks: ${mib(total)})`);
    const advice =
      'spread the keys over more workers or partitions (workers, shufflePartitions), keep less (a shorter ' +
      'watermark delay or TTL), or give the workers more memory';
    if (this.configured !== undefined && total > this.configured) {
      return new MillraceError(
        ErrorCode.STATE_MEMORY_EXCEEDED,
        `${holds}, over the limit of ${mib(this.configured)} (stateMemoryLimitBytes): ${advice}, or raise the limit`,
      );
    }
    if (this.observer !== null && this.heapAfterGc > this.heapLimit * HEAP_SHARE) {
      return new MillraceError(
        ErrorCode.STATE_MEMORY_EXCEEDED,
        `${holds}, and the worker thread's heap holds ${mib(this.heapAfterGc)} after a full collection, over ` +
          `${HEAP_SHARE * 100} % of its old generation's limit of ${mib(this.heapLimit)} (node --max-old-space-size): ${advice}`,
      );
    }
    return null;
  }
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** Bytes used in the heap's old generation: every space but the young ones. */
function oldGenerationUsed(): number {
  let used = 0;
  for (const s of getHeapSpaceStatistics()) {
    if (s.space_name !== 'new_space' && s.space_name !== 'new_large_object_space') used += s.space_used_size;
  }
  return used;
}
