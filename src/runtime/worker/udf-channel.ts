import type { BatchChannel, BatchResponse } from '../../operators/contract.js';
import { FrameKind } from '../channel/frame-kind.js';
import { TAG_KIND_MASK } from '../channel/ring-layout.js';
import type { RingConsumer, RingProducer } from '../channel/spsc-ring.js';
import { copyFrame, readError, writeChunks } from '../udf/udf-frames.js';

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
