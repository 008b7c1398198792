import { FrameReader } from '../channel/frame-codec.js';
import type { RingConsumer } from '../channel/spsc-ring.js';

/** One input ring and where its stream stands. */
export class InputChannel {
  readonly reader: FrameReader;
  /** Its producer sent END_OF_STREAM. */
  eos = false;
  /** It delivered the barrier of the epoch being aligned; it is not read until the others do. */
  aligned = false;
  barrierEpoch = -1;
  /** Highest processAllAvailable probe it delivered. */
  flushId = 0;

  constructor(
    ring: RingConsumer,
    /** Its position among the task's inputs. */
    readonly index: number,
  ) {
    this.reader = new FrameReader(ring);
  }
}

/**
 * A task's inputs and the rules for markers that travel on all of them: a barrier is complete
 * when every live input has delivered it (aligned: an input that did is not read until the others
 * do), a flush probe has passed when every live input passed it, the stream ends when every input
 * ended. An input that ended counts as having delivered every later marker.
 */
export class InputSet {
  readonly channels: InputChannel[];

  constructor(rings: readonly RingConsumer[]) {
    this.channels = rings.map((r, i) => new InputChannel(r, i));
  }

  /** The epoch whose barrier every live input delivered, or -1. */
  alignedEpoch(): number {
    let epoch = -1;
    for (const i of this.channels) {
      if (i.eos) continue;
      if (!i.aligned) return -1;
      epoch = i.barrierEpoch;
    }
    return epoch;
  }

  /** After a complete barrier: read every input again. */
  releaseAlignment(): void {
    for (const i of this.channels) i.aligned = false;
  }

  /** The highest flush probe every live input passed (Infinity when all ended). */
  flushedUpTo(): number {
    let min = Number.POSITIVE_INFINITY;
    for (const i of this.channels) if (!i.eos && i.flushId < min) min = i.flushId;
    return min;
  }

  allEnded(): boolean {
    return this.channels.every((i) => i.eos);
  }

  /** Does a readable input have a frame? */
  hasFrame(): boolean {
    for (const i of this.channels) if (!i.eos && !i.aligned && i.reader.ring.hasFrame()) return true;
    return false;
  }

  /** Hands back the space of everything read (called at the end of every step). */
  flushReleases(): void {
    for (let i = 0; i < this.channels.length; i++) this.channels[i]!.reader.ring.flushRelease();
  }
}
