import { isThenable, type SinkCommitMessage, type SinkRuntime } from '../sink-runtime.js';
import type { ForeachSinkSpec, ForeachWriter } from '../spec.js';

/**
 * Drives a user's ForeachWriter for one partition: `open(partition, epoch)` before the epoch's
 * first row, `process(row)` for each row unless open returned false, `close(null)` at the epoch's
 * end, `close(error)` when the task fails.
 */
export class ForeachRuntime implements SinkRuntime {
  private readonly writer: ForeachWriter;
  private opened = false;
  private accepting = true;
  private epoch: number;

  constructor(
    spec: ForeachSinkSpec,
    private readonly partition: number,
    firstEpoch: number,
  ) {
    this.writer = spec.writer;
    this.epoch = firstEpoch;
  }

  write(row: unknown): unknown {
    if (!this.opened) {
      this.opened = true;
      const r = this.writer.open?.(this.partition, this.epoch);
      if (isThenable(r)) {
        return Promise.resolve(r).then((ok) => {
          this.accepting = ok !== false;
          return this.accepting ? this.writer.process(row) : undefined;
        });
      }
      this.accepting = r !== false;
    }
    return this.accepting ? this.writer.process(row) : undefined;
  }

  epochEnd(epoch: number): PromiseLike<SinkCommitMessage | undefined> | undefined {
    this.epoch = epoch + 1;
    if (!this.opened) return undefined;
    this.opened = false;
    const r = this.writer.close?.(null);
    return isThenable(r) ? Promise.resolve(r).then(() => undefined) : undefined;
  }

  close(error: Error | null): unknown {
    if (!this.opened) return undefined;
    this.opened = false;
    return this.writer.close?.(error);
  }
}
