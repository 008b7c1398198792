import type { RowSink } from '../../operators/contract.js';
import { FrameWriter } from '../channel/frame-codec.js';
import type { RingProducer } from '../channel/spsc-ring.js';

/** The end of a task's chain: rows go on to the next stage, or to the sink. */
export interface TaskOutput extends RowSink {
  /** Passes a control marker downstream (every partition of the next stage, or the driver). */
  marker(kind: number, value: number, arg?: number): void;
  /** True while frames wait for ring space; the task reads no more input until it clears. */
  readonly blocked: boolean;
  /** Retries waiting frames; true when none are left. */
  flush(): boolean;
  /** Makes everything written so far visible downstream (called at the end of every step). */
  publish(): void;
}

/** Writers for a set of rings, with the blocked/flush bookkeeping every multi-ring output shares. */
export class WriterSet {
  readonly writers: FrameWriter[];

  constructor(rings: readonly RingProducer[]) {
    this.writers = rings.map((r) => new FrameWriter(r));
  }

  get blocked(): boolean {
    for (let i = 0; i < this.writers.length; i++) if (this.writers[i]!.blocked) return true;
    return false;
  }

  flush(): boolean {
    let clear = true;
    for (let i = 0; i < this.writers.length; i++) if (!this.writers[i]!.flush()) clear = false;
    return clear;
  }

  marker(kind: number, value: number, arg = 0): void {
    for (let i = 0; i < this.writers.length; i++) this.writers[i]!.writeMarker(kind, value, arg);
  }

  publish(): void {
    for (let i = 0; i < this.writers.length; i++) this.writers[i]!.publish();
  }

  fullEvents(): number {
    let n = 0;
    for (const w of this.writers) n += w.fullEvents;
    return n;
  }
}
