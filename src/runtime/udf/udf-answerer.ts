import { ErrorCode, MillraceError, type SerializedError, serializeError } from '../../errors.js';
import { ArrowEncoder } from '../../operators/arrow/ipc.js';
import { ArrowDecoder } from '../../operators/arrow/ipc-decoder.js';
import type { UdfRunner } from './udf-runner.js';

/** An answer to one request: the IPC messages of its batches, or the error to answer with. */
export type UdfAnswer =
  | { readonly ok: true; readonly chunks: Uint8Array[]; readonly bytes: number }
  | { readonly ok: false; readonly error: SerializedError };

/**
 * Answers an Arrow operator's requests on a UDF thread: decodes the request's batches, runs the operator's function on each, and
 * encodes what it returned. A function that throws is answered with its error (the task applies
 * the query's bad-record policy to the batch's rows); an answer larger than `maxAnswerBytes` too.
 */
export class UdfAnswerer {
  private readonly decoder = new ArrowDecoder();
  private readonly encoder = new ArrowEncoder();
  /**
   * The batches of the answer being made: a list kept for the operator and emptied after each
   * answer (see ArrowDecoder.forEach: a list made per answer would be moved to the old generation).
   */
  private readonly parts: ReturnType<UdfRunner> = [];

  constructor(
    private readonly run: UdfRunner,
    private readonly maxAnswerBytes: number,
  ) {}

  answer(request: Uint8Array): UdfAnswer {
    const out = this.parts;
    try {
      this.decoder.forEach(request, (b) => {
        for (const part of this.run(b)) out.push(part);
      });
    } catch (e) {
      out.length = 0;
      return { ok: false, error: serializeError(e, { userCode: !(e instanceof MillraceError) }) };
    }
    const { chunks, bytes } = this.encoder.encode(out);
    out.length = 0;
    if (bytes > this.maxAnswerBytes) {
      this.encoder.forget();
      const error = new MillraceError(
        ErrorCode.RECORD_TOO_LARGE,
        `the answer to a batch (${bytes} bytes in Arrow) does not fit the UDF channel (at most ${this.maxAnswerBytes}); lower maxRecordsPerBatch`,
      );
      return { ok: false, error: serializeError(error) };
    }
    return { ok: true, chunks, bytes };
  }
}
