import type { SerializedError } from '../../errors.js';
import { FrameKind } from '../channel/frame-kind.js';
import type { RingConsumer, RingProducer } from '../channel/spsc-ring.js';
import { UdfAnswerer } from './udf-answerer.js';
import { copyFrame, errorFrame, writeChunks } from './udf-frames.js';
import type { UdfRunner } from './udf-runner.js';

/** An answer written as one frame: its kind, and its payload as chunks (`bytes` in all). */
interface Answer {
  readonly kind: number;
  readonly chunks: Uint8Array[];
  readonly bytes: number;
}

/**
 * The UDF thread's end of one task operator's channel: it takes the requests in order, runs the
 * operator's function on each batch and writes the answer. A task sends several requests ahead;
 * an answer the response ring has no room for (the task has not taken the earlier ones) waits,
 * and no request is taken until it is written. A function that throws is answered with its error
 * (the task applies the query's bad-record policy to the batch's rows).
 */
export class ChannelServer {
  private readonly answerer: UdfAnswerer;
  private unanswered: Answer | null = null;

  constructor(
    private readonly requests: RingConsumer,
    private readonly responses: RingProducer,
    run: UdfRunner,
  ) {
    this.answerer = new UdfAnswerer(run, responses.maxPayloadBytes);
  }

  /** A request waits (cheap: one shared-memory load at most). */
  hasRequest(): boolean {
    return this.requests.hasFrame();
  }

  /**
   * Whether there is work now: a request, or an answer that did not fit the ring before and has
   * just been written (the task rings this thread when it frees room in the ring).
   */
  canAnswer(): boolean {
    return this.unanswered !== null ? this.flush() : this.requests.hasFrame();
  }

  /**
   * Answers one request if one waits, after an answer still waiting for room, if any; false if
   * it did nothing.
   */
  answer(): boolean {
    if (this.unanswered !== null) return this.flush();
    const ring = this.requests;
    if (!ring.poll()) return false;
    const bytes = copyFrame(ring);
    ring.release();
    const a = this.answerer.answer(bytes);
    if (a.ok) this.reply({ kind: FrameKind.DATA, chunks: a.chunks, bytes: a.bytes });
    else this.replyError(a.error);
    return true;
  }

  /** Writes the answer that waited for room; false when there is still none. */
  private flush(): boolean {
    const a = this.unanswered!;
    if (!writeChunks(this.responses, a.kind, a.chunks, a.bytes)) return false;
    this.unanswered = null;
    return true;
  }

  /** Writes an answer, or keeps it until the task has taken earlier ones. */
  private reply(a: Answer): void {
    if (!writeChunks(this.responses, a.kind, a.chunks, a.bytes)) this.unanswered = a;
  }

  private replyError(error: SerializedError): void {
    const bytes = errorFrame(error);
    this.reply({ kind: FrameKind.UDF_ERROR, chunks: [bytes], bytes: bytes.byteLength });
  }
}
