import { ErrorCode, MillraceError, type SerializedError, serializeError } from '../../errors.js';
import { ArrowEncoder } from '../../operators/arrow/ipc.js';
import { ArrowDecoder } from '../../operators/arrow/ipc-decoder.js';
import { FrameKind } from '../channel/frame-kind.js';
import type { RingConsumer, RingProducer } from '../channel/spsc-ring.js';
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
  private readonly decoder = new ArrowDecoder();
  private readonly encoder = new ArrowEncoder();
  /**
   * The batches of the answer being made: a list kept for the channel and emptied after each
   * answer (see ArrowDecoder.forEach: a list made per answer would be moved to the old generation).
   */
  private readonly parts: ReturnType<UdfRunner> = [];
  private unanswered: Answer | null = null;

  constructor(
    private readonly requests: RingConsumer,
    private readonly responses: RingProducer,
    private readonly run: UdfRunner,
  ) {}

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
    const out = this.parts;
    try {
      this.decoder.forEach(bytes, (b) => {
        for (const part of this.run(b)) out.push(part);
      });
    } catch (e) {
      out.length = 0;
      const engine = e instanceof MillraceError;
      this.replyError(serializeError(e, { userCode: !engine }));
      return true;
    }
    const { chunks, bytes: n } = this.encoder.encode(out);
    out.length = 0;
    if (n > this.responses.maxPayloadBytes) {
      this.encoder.forget();
      const error = new MillraceError(
        ErrorCode.RECORD_TOO_LARGE,
        `the answer to a batch (${n} bytes in Arrow) does not fit the UDF channel (at most ${this.responses.maxPayloadBytes}); lower maxRecordsPerBatch`,
      );
      this.replyError(serializeError(error));
      return true;
    }
    this.reply({ kind: FrameKind.DATA, chunks, bytes: n });
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
