import type { BatchChannel, BatchResponse } from '../../operators/contract.js';
import { FrameKind } from '../channel/frame-kind.js';
import { TAG_KIND_MASK } from '../channel/ring-layout.js';
import type { RingConsumer, RingProducer } from '../channel/spsc-ring.js';
import { UdfAnswerer } from '../udf/udf-answerer.js';
import { answeredError, copyFrame, readError, writeChunks } from '../udf/udf-frames.js';
import type { UdfRunner } from '../udf/udf-runner.js';

/** A task operator's end of its UDF channel: requests out on one ring, answers back on another. */
export class UdfChannel implements BatchChannel {
  readonly maxRequestBytes: number;

  constructor(
    private readonly requests: RingProducer,
    private readonly responses: RingConsumer,
  ) {
    this.maxRequestBytes = requests.maxPayloadBytes;
  }

  send(chunks: readonly Uint8Array[], bytes: number): boolean {
    return writeChunks(this.requests, FrameKind.DATA, chunks, bytes);
  }

  hasResponse(): boolean {
    return this.responses.hasFrame();
  }

  receive(): BatchResponse | null {
    const ring = this.responses;
    if (!ring.poll()) return null;
    const bytes = copyFrame(ring);
    const kind = ring.tag & TAG_KIND_MASK;
    ring.release();
    return kind === FrameKind.UDF_ERROR ? { ok: false, error: readError(bytes) } : { ok: true, bytes };
  }
}

/** No ring bounds a request or an answer that stays on the task's thread. */
const INLINE_MAX_BYTES = Number.MAX_SAFE_INTEGER;

/**
 * A task operator's channel when its Arrow code runs on the task's own thread (the default; see
 * `isolate`): each request is answered as it is sent, by the same code a UDF thread runs, with no
 * ring between threads and no thread to wake. The answers wait, in order, until the operator takes
 * them.
 */
export class InlineUdfChannel implements BatchChannel {
  readonly maxRequestBytes = INLINE_MAX_BYTES;
  private readonly answerer: UdfAnswerer;
  private readonly answers: BatchResponse[] = [];

  constructor(run: UdfRunner) {
    this.answerer = new UdfAnswerer(run, INLINE_MAX_BYTES);
  }

  send(chunks: readonly Uint8Array[], bytes: number): boolean {
    const a = this.answerer.answer(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes));
    // The answer is copied out: its chunks may be views of what the function returned.
    this.answers.push(
      a.ok
        ? { ok: true, bytes: Buffer.concat(a.chunks, a.bytes) }
        : { ok: false, error: answeredError(a.error) },
    );
    return true;
  }

  hasResponse(): boolean {
    return this.answers.length > 0;
  }

  receive(): BatchResponse | null {
    return this.answers.shift() ?? null;
  }
}
