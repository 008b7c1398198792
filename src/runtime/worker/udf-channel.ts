import type { RecordBatch } from 'apache-arrow';
import { MillraceError, serializeError } from '../../errors.js';
import type {
  AnsweredColumns,
  BatchChannel,
  BatchResponse,
  DirectBatchChannel,
} from '../../operators/contract.js';
import { FrameKind } from '../channel/frame-kind.js';
import { TAG_KIND_MASK } from '../channel/ring-layout.js';
import type { RingConsumer, RingProducer } from '../channel/spsc-ring.js';
import { answeredError, copyFrame, readError, writeChunks } from '../udf/udf-frames.js';

/** A task operator's end of its UDF channel: requests out on one ring, answers back on another. */
export class UdfChannel implements BatchChannel {
  readonly direct = false as const;
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

/**
 * A task operator's channel when its Arrow code runs on the task's own thread (the default; see
 * `isolate`): each batch goes to the function as it was built from the rows, and what the function
 * returned comes back as columns, with no IPC encoding, no ring and no thread to wake. The answers
 * wait, in order, until the operator takes them.
 */
export class InlineUdfChannel implements DirectBatchChannel {
  readonly direct = true as const;
  private readonly answers: BatchResponse[] = [];

  constructor(private readonly run: (batch: RecordBatch) => AnsweredColumns[]) {}

  call(batch: RecordBatch): void {
    let answer: BatchResponse;
    try {
      answer = { ok: true, answered: this.run(batch) };
    } catch (e) {
      // As a UDF thread answers it: user code's error keeps its name, message and stack.
      answer = {
        ok: false,
        error: answeredError(serializeError(e, { userCode: !(e instanceof MillraceError) })),
      };
    }
    this.answers.push(answer);
  }

  hasResponse(): boolean {
    return this.answers.length > 0;
  }

  receive(): BatchResponse | null {
    return this.answers.shift() ?? null;
  }
}
