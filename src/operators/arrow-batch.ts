import type { RecordBatch } from 'apache-arrow';
import { ErrorCode, MillraceError } from '../errors.js';
import type { PlannedOperator } from '../plan/analyze.js';
import { type ArrowUdfCall, batchSizeOf } from '../plan/arrow-udf.js';
import { type ColumnExpr, compileExpr, isArrowUdf } from '../plan/expressions.js';
import { answeredRows, batchRows, RowColumns, type RowMisfit } from './arrow/columns.js';
import { asHeldRow, type HeldRows, RowQueue } from './arrow/held-rows.js';
import { ArrowEncoder, type Encoded } from './arrow/ipc.js';
import { ArrowDecoder } from './arrow/ipc-decoder.js';
import type {
  AnsweredColumns,
  BatchChannel,
  BatchResponse,
  DirectBatchChannel,
  HoldingOperator,
  OperatorContext,
  RowSink,
} from './contract.js';

/** A batch's answer, let go row by row as the output takes them. */
interface Draining {
  readonly held: HeldRows;
  /** Output rows (mapInArrow) or result columns (a projection), or the batch's error. */
  readonly response: BatchResponse;
  readonly emit: (i: number) => void;
  readonly count: number;
  next: number;
}

/**
 * Full batches one operator has sent and not yet had answered, at most: the UDF thread works on
 * one while the next ones wait in its ring, so a batch's round trip does not bound the rate. (On
 * the task's thread each batch is answered as it is sent.)
 */
const BATCHES_IN_FLIGHT = 8;

/** A batch encoded but not sent: the request ring had no room for it (retried as answers come). */
interface Unsent {
  readonly held: HeldRows;
  readonly chunks: Uint8Array[];
  readonly bytes: number;
}

/** A successful answer: IPC messages from a UDF thread, or columns made on the task's thread. */
type Answer = Extract<BatchResponse, { ok: true }>;

/**
 * An operator whose user code runs in Arrow batches: on the task's thread (a direct channel: the
 * batch is built from the rows and given to the function, no bytes between), or on a UDF thread
 * (isolate: the batch goes as Arrow IPC messages through a ring, the answer comes back so). Rows are
 * held with their metadata; a batch goes out when `maxRecordsPerBatch` rows are held (up to
 * {@link BATCHES_IN_FLIGHT} of them unanswered), or when no more input waits and none is in flight
 * (the task closes it): under load, batches fill while earlier ones are worked on. Answers come
 * back in order and their rows go on with the metadata of the rows they came from. A batch the
 * UDF failed on is a bad record for each of its rows (the query's `onBadRecord`).
 */
abstract class ArrowBatchOperator implements HoldingOperator {
  readonly holding = true as const;
  protected readonly maxRows: number;
  private readonly queue = new RowQueue();
  /** Sent batches in order, the oldest first. */
  private readonly inFlight: HeldRows[] = [];
  private unsent: Unsent | null = null;
  private draining: Draining | null = null;
  private readonly channel: BatchChannel | DirectBatchChannel;
  private readonly encoder = new ArrowEncoder();
  protected readonly decoder = new ArrowDecoder();
  /** Fewer rows per batch after one did not fit the channel's frame. */
  private rowCap = Number.POSITIVE_INFINITY;

  constructor(
    protected readonly op: PlannedOperator<any>,
    protected readonly next: RowSink,
    protected readonly ctx: OperatorContext,
    own: number | undefined,
  ) {
    this.maxRows = batchSizeOf(own, ctx.arrowMaxRecordsPerBatch, ctx.microBatch);
    this.channel = ctx.udfChannel(op.id);
  }

  /**
   * The request for a batch of rows; rows that cannot go in it are reported in `misfits`. `lend`:
   * the batch may be one made before, written again (it is answered before the next is made).
   */
  protected abstract request(
    rows: readonly unknown[],
    misfits: RowMisfit[],
    lend: boolean,
  ): { batch: RecordBatch; kept: number[] | null };
  /** The request for a batch of rows written in place (no Arrow batch built), or null when it cannot be. */
  protected abstract requestInPlace(rows: readonly unknown[], encoder: ArrowEncoder): Encoded | null;
  /** How row `i` of an answered batch goes on (pushes to `next`). */
  protected abstract emitter(held: HeldRows, answer: Answer): { count: number; emit: (i: number) => void };

  push(row: unknown): void {
    this.queue.add(row, this.ctx.meta);
    if (this.queue.length >= Math.min(this.maxRows, this.rowCap)) this.sendFull();
  }

  holds(): boolean {
    return (
      this.queue.length > 0 || this.inFlight.length > 0 || this.unsent !== null || this.draining !== null
    );
  }

  full(): boolean {
    return (
      this.queue.length >= this.maxRows && (this.inFlight.length >= BATCHES_IN_FLIGHT || this.unsent !== null)
    );
  }

  ready(): boolean {
    return this.draining !== null || (this.inFlight.length > 0 && this.channel.hasResponse());
  }

  awaiting(): boolean {
    return this.inFlight.length > 0;
  }

  close(): void {
    if (this.inFlight.length === 0 && this.unsent === null && this.queue.length > 0) this.send();
  }

  advance(): boolean {
    let did = false;
    // Answers in order, each one's rows let go before the next is taken, while the output takes them.
    for (;;) {
      if (this.draining !== null) {
        did = true;
        if (!this.drain()) return did;
      }
      if (this.inFlight.length === 0) return did;
      const response = this.channel.receive();
      if (response === null) return did;
      const held = this.inFlight.shift()!;
      // Batches go out before this one's rows go on: the UDF works while the task does.
      this.sendFull();
      const { count, emit } = response.ok
        ? this.emitter(held, response)
        : {
            count: held.length,
            // An engine error (a result of the wrong length or type) keeps its code.
            emit: (i: number) =>
              this.ctx.badRecord(
                this.op,
                held.rows[i],
                response.error,
                !(response.error instanceof MillraceError),
              ),
          };
      this.draining = { held, response, emit, count, next: 0 };
    }
  }

  /** Sends full batches while fewer than {@link BATCHES_IN_FLIGHT} are unanswered and the ring takes them. */
  private sendFull(): void {
    if (this.unsent !== null) {
      if (this.channel.direct || !this.channel.send(this.unsent.chunks, this.unsent.bytes)) return;
      this.inFlight.push(this.unsent.held);
      this.unsent = null;
    }
    while (
      this.inFlight.length < BATCHES_IN_FLIGHT &&
      this.unsent === null &&
      this.queue.length >= Math.min(this.maxRows, this.rowCap)
    )
      this.send();
  }

  /** Lets the answered rows go while the output takes them; true when all went. */
  private drain(): boolean {
    const d = this.draining!;
    const meta = this.ctx.meta;
    const perRow = d.count === d.held.length;
    while (d.next < d.count) {
      if (this.ctx.outputBlocked()) return false;
      d.held.restore(perRow ? d.next : 0, meta);
      d.emit(d.next++);
    }
    this.draining = null;
    return true;
  }

  private send(): void {
    const n = Math.min(this.queue.length, this.maxRows, this.rowCap);
    let held = this.queue.take(n);
    const channel = this.channel;
    let encoded = channel.direct ? null : this.requestInPlace(held.rows, this.encoder);
    if (encoded === null) {
      const misfits: RowMisfit[] = [];
      const { batch, kept } = this.request(held.rows, misfits, channel.direct);
      for (const m of misfits)
        asHeldRow(held, m.index, this.ctx.meta, () =>
          this.ctx.badRecord(this.op, held.rows[m.index], m.error, false),
        );
      if (kept !== null) held = held.pick(kept);
      if (held.length === 0) return;
      if (channel.direct) {
        channel.call(batch);
        this.inFlight.push(held);
        return;
      }
      encoded = this.encoder.encode([batch]);
    }
    if (channel.direct) throw new Error('internal: a batch encoded for the task thread');
    const { chunks, bytes } = encoded;
    if (bytes > channel.maxRequestBytes) {
      this.encoder.forget();
      if (held.length === 1) {
        asHeldRow(held, 0, this.ctx.meta, () =>
          this.ctx.badRecord(
            this.op,
            held.rows[0],
            new MillraceError(
              ErrorCode.RECORD_TOO_LARGE,
              `a row of ${bytes} bytes in Arrow does not fit the UDF channel (at most ${channel.maxRequestBytes}); raise ringCapacityBytes`,
            ),
            false,
          ),
        );
        return;
      }
      this.rowCap = Math.ceil(held.length / 2);
      this.queue.putBack(held);
      this.send();
      return;
    }
    // The ring is full of earlier batches: this one goes when the UDF thread has taken some.
    if (!channel.send(chunks, bytes)) this.unsent = { held, chunks, bytes };
    else this.inFlight.push(held);
  }
}

/**
 * `withColumn` / `select` with Arrow UDFs: one request per batch carries the columns every Arrow
 * UDF of the operator reads; the answer, one column per UDF. Other expressions are computed per
 * row as the rows go on.
 */
export class ArrowProjectionOperator extends ArrowBatchOperator {
  private readonly columns: RowColumns;
  private readonly outputs: { name: string; arrow: number; value: ((row: unknown) => unknown) | null }[];
  private readonly keepRow: boolean;

  constructor(
    op: PlannedOperator<'withColumn'> | PlannedOperator<'select'>,
    next: RowSink,
    ctx: OperatorContext,
  ) {
    const node = op.node;
    const cols: { name: string; expr: ColumnExpr }[] =
      node.kind === 'withColumn' ? [{ name: node.column, expr: node.expr }] : [...node.columns];
    const udfs = cols.map((c) => c.expr).filter(isArrowUdf);
    super(op, next, ctx, smallest(udfs));
    const input = [...new Set(udfs.flatMap((u) => u.input))];
    const declared = Object.assign({}, ...udfs.map((u) => u.inputTypes));
    this.columns = new RowColumns(`${udfs.map((u) => `arrowUdf '${u.name}'`).join(', ')}`, input, declared);
    let k = 0;
    this.outputs = cols.map((c) =>
      isArrowUdf(c.expr)
        ? { name: c.name, arrow: k++, value: null }
        : { name: c.name, arrow: -1, value: compileExpr(c.expr) },
    );
    this.keepRow = node.kind === 'withColumn';
  }

  protected request(rows: readonly unknown[], misfits: RowMisfit[], lend: boolean) {
    return this.columns.toBatch(rows, rows.length, misfits, lend);
  }

  protected requestInPlace(rows: readonly unknown[], encoder: ArrowEncoder) {
    return this.columns.encodeInPlace(rows, rows.length, encoder);
  }

  protected emitter(held: HeldRows, answer: Answer) {
    const columns = 'bytes' in answer ? this.decodedColumns(answer.bytes) : joinedColumns(answer.answered);
    const { outputs, keepRow, next } = this;
    if (keepRow) {
      // withColumn(name, arrowUdf(…)): the row and its one new column.
      const name = outputs[0]!.name;
      const column = columns[0]!;
      const emit = (i: number): void => {
        const out = Object.assign({}, held.rows[i]) as Record<string, unknown>;
        out[name] = column[i];
        next.push(out);
      };
      return { count: held.length, emit };
    }
    const emit = (i: number): void => {
      const row = held.rows[i];
      const out: Record<string, unknown> = {};
      for (const o of outputs) {
        if (o.value === null) {
          out[o.name] = columns[o.arrow]![i];
          continue;
        }
        try {
          out[o.name] = o.value(row);
        } catch (e) {
          this.ctx.badRecord(this.op, row, e);
          return;
        }
      }
      next.push(out);
    };
    return { count: held.length, emit };
  }

  private decodedColumns(bytes: Uint8Array): readonly ArrayLike<unknown>[] {
    const answered: AnsweredColumns[] = [];
    this.decoder.forEachColumns(bytes, (length, columns) => answered.push({ length, names: [], columns }));
    return joinedColumns(answered);
  }
}

/** An answer's columns: one batch's, or a UDF's that answered in chunks, joined. */
function joinedColumns(answered: readonly AnsweredColumns[]): readonly ArrayLike<unknown>[] {
  if (answered.length === 0) throw new Error('internal: a UDF answer without a batch');
  if (answered.length === 1) return answered[0]!.columns;
  return answered[0]!.columns.map((_, c) => answered.flatMap((a) => Array.from(a.columns[c]!)));
}

/** `mapInArrow(fn)`: batches of whole rows to `fn`; its batches' rows go on. */
export class MapInArrowOperator extends ArrowBatchOperator {
  private columns: RowColumns | null = null;

  constructor(op: PlannedOperator<'mapInArrow'>, next: RowSink, ctx: OperatorContext) {
    super(op, next, ctx, op.node.maxRecordsPerBatch);
  }

  protected requestInPlace(rows: readonly unknown[], encoder: ArrowEncoder) {
    return this.columns?.encodeInPlace(rows, rows.length, encoder) ?? null;
  }

  protected request(rows: readonly unknown[], misfits: RowMisfit[], lend: boolean) {
    // The columns are those of the first row (plain-object rows of one shape, as Spark's schema).
    this.columns ??= new RowColumns(
      `mapInArrow (${this.op.node.kind}#${this.op.id})`,
      Object.keys(rows[0] ?? {}),
      {},
    );
    return this.columns.toBatch(rows, rows.length, misfits, lend);
  }

  protected emitter(_held: HeldRows, answer: Answer) {
    const rows =
      'bytes' in answer ? batchRows(this.decoder.decode(answer.bytes)) : answeredRows(answer.answered);
    return { count: rows.length, emit: (i: number) => this.next.push(rows[i]) };
  }
}

function smallest(udfs: readonly ArrowUdfCall[]): number | undefined {
  const own = udfs.map((u) => u.maxRecordsPerBatch).filter((n): n is number => n !== undefined);
  return own.length === 0 ? undefined : Math.min(...own);
}
