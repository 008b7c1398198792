import {
  isThenable,
  type SinkCommit,
  type SinkCommitMessage,
  type SinkRuntime,
} from '../../connectors/sink-runtime.js';
import { FrameKind, WATERMARK_ARG_INPUT_MASK } from '../channel/frame-kind.js';
import type { HostContext } from './host-context.js';
import type { RowMeta } from './row-meta.js';
import type { TaskOutput } from './task-output.js';

/** What the sink output needs from its task. */
export interface SinkTask {
  readonly index: number;
  readonly partition: number;
  readonly meta: RowMeta;
  rowsOut: number;
  /** Makes the task wait for `p` before it reads more input. */
  waitFor(p: PromiseLike<unknown>): void;
  /** Sink code threw: fail the task (sink errors are not bad records). */
  sinkFailed(error: unknown): never;
  /** Sink work running in the background failed: the task fails at its next step. */
  sinkFailedLater(error: unknown): void;
}

/**
 * The last element of a sink stage's chain: hands rows to the sink, records latency at the moment
 * of emit, and acknowledges markers to the driver on the host's result ring (a barrier ack is how
 * the driver learns this partition finished an epoch; a flush ack answers processAllAvailable).
 */
export class SinkOutput implements TaskOutput {
  constructor(
    private readonly sink: SinkRuntime,
    private readonly task: SinkTask,
    private readonly host: HostContext,
  ) {
    sink.onBackgroundError?.((e) => task.sinkFailedLater(e));
  }

  push(row: unknown): void {
    let r: unknown;
    try {
      r = this.sink.write(row, this.task.meta.sourceTime);
    } catch (e) {
      this.task.sinkFailed(e);
    }
    this.task.rowsOut++;
    const m = this.task.meta;
    this.host.recorder.record(m.sourceTime, m.readTime, this.host.precise.now());
    if (isThenable(r)) this.task.waitFor(r);
  }

  marker(kind: number, value: number, arg = 0): void {
    // The driver keeps time from the tasks' reports; watermarks stop at the sink, unless it
    // passes them on (a repartition topic's).
    if (kind === FrameKind.WATERMARK) {
      this.sink.watermark?.(arg & WATERMARK_ARG_INPUT_MASK, value);
      return;
    }
    let r: unknown;
    try {
      if (kind === FrameKind.BARRIER) r = this.sink.epochEnd(value);
      else if (kind === FrameKind.END_OF_STREAM) r = this.sink.close(null);
      else if (kind === FrameKind.FLUSH) r = this.sink.flush?.();
    } catch (e) {
      this.task.sinkFailed(e);
    }
    // What the sink reports for the driver's commit travels before the acknowledgement.
    const ack = (message: unknown) => {
      if (kind === FrameKind.BARRIER && message !== undefined && message !== null) {
        const commit: SinkCommit = {
          epoch: value,
          partition: this.task.partition,
          message: message as SinkCommitMessage,
        };
        this.host.result.writeValue(FrameKind.SINK_COMMIT, commit, this.task.index);
      }
      this.host.result.writeMarker(kind, value, this.task.index);
    };
    if (isThenable(r)) this.task.waitFor(Promise.resolve(r).then(ack));
    else ack(kind === FrameKind.BARRIER ? r : undefined);
  }

  get blocked(): boolean {
    return this.host.result.blocked;
  }

  commitEpoch(epoch: number): Promise<void> | undefined {
    return this.sink.commitEpoch?.(epoch);
  }

  /** The query failed: give the sink a chance to release what it holds. Errors are ignored. */
  abort(error: Error): void {
    try {
      const r = this.sink.close(error);
      if (isThenable(r)) r.then(undefined, () => {});
    } catch {
      // The query already failed with its own error.
    }
  }

  flush(): boolean {
    return this.host.result.flush();
  }

  publish(): void {
    this.host.result.publish();
  }
}
