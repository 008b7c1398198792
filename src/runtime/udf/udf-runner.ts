import type { DataType, RecordBatch, Table, Vector } from 'apache-arrow';
import { ErrorCode, MillraceError } from '../../errors.js';
import { arrow } from '../../operators/arrow/arrow-module.js';
import { tableOf } from '../../operators/arrow/column-table.js';
import { answerColumns, ownedValues, resolveType, resultVector } from '../../operators/arrow/columns.js';
import type { BatchSchema, ColumnsBatch } from '../../operators/arrow/ipc.js';
import type { AnsweredColumns } from '../../operators/contract.js';
import type { PlannedOperator } from '../../plan/analyze.js';
import { isArrowUdf } from '../../plan/expressions.js';

/** What a UDF thread does with one request batch of an operator: the batches of its answer. */
export type UdfRunner = (batch: RecordBatch) => (RecordBatch | ColumnsBatch)[];

/**
 * The runner of an operator the task sent to this thread, found by its place in the plan (as a
 * host finds its operators): a projection's Arrow UDFs each get a table of their input columns and
 * answer one column (named by its place); mapInArrow's function gets the batch and answers batches.
 */
export function udfRunner(op: PlannedOperator): UdfRunner {
  const A = arrow();
  const node = op.node;
  if (node.kind === 'mapInArrow') {
    const fn = node.fn;
    const owner = `mapInArrow (${node.kind}#${op.id}${node.label ? ` '${node.label}'` : ''})`;
    return (batch) => answerBatches(fn(batch), owner);
  }
  const udfs = projectionUdfs(op);
  // The answer's schema: one column per UDF, named by its place, of its declared type (which
  // resultVector checks each result against).
  const fields = udfs.map((u, k) => new A.Field(String(k), u.type, true));
  const answer: BatchSchema = { schema: new A.Schema(fields), struct: new A.Struct(fields) };
  return (batch) => {
    const columns: Record<string, Vector> = {};
    let chunked = false;
    udfs.forEach((u, k) => {
      const v = resultVector(u.fn(u.tableOf(batch)), u.type, batch.numRows, u.owner);
      if (v.data.length !== 1) chunked = true;
      columns[String(k)] = v;
    });
    if (chunked) return new A.Table(columns).batches;
    return [
      { schema: answer, length: batch.numRows, children: Object.values(columns).map((v) => v.data[0]!) },
    ];
  };
}

/**
 * What the task's thread runs for an operator (see InlineUdfChannel): {@link udfRunner}'s work,
 * with its answer as columns the operator owns. A projection's UDF that returns a typed array of
 * its declared type's own kind (the usual case) has it copied as it is, with no Arrow vector made
 * around it; anything else goes through {@link resultVector}'s checks and conversions.
 */
export function inlineRunner(op: PlannedOperator): (batch: RecordBatch) => AnsweredColumns[] {
  if (op.node.kind === 'mapInArrow') {
    const run = udfRunner(op);
    return (batch) => answerColumns(run(batch));
  }
  const udfs = projectionUdfs(op);
  const names = udfs.map((_, k) => String(k));
  return (batch) => {
    const length = batch.numRows;
    const columns = udfs.map((u) => {
      const result = u.fn(u.tableOf(batch));
      return u.arrayType !== null &&
        ArrayBuffer.isView(result) &&
        result.constructor === u.arrayType &&
        (result as Float64Array).length === length
        ? (result as Float64Array).slice()
        : ownedValues(resultVector(result, u.type, length, u.owner));
    });
    return [{ length, names, columns }];
  };
}

/** A projection's Arrow UDF, as both runners call it. */
interface ProjectionUdf {
  readonly fn: (table: Table) => unknown;
  readonly type: DataType;
  /** The typed array of a fixed-width number type's values (floats, integers below 64 bits), or null. */
  readonly arrayType: unknown;
  readonly owner: string;
  /** The table the UDF gets for `batch`: the same one for a batch lent again (RowColumns.toBatch). */
  tableOf(batch: RecordBatch): Table;
}

function projectionUdfs(op: PlannedOperator): ProjectionUdf[] {
  const A = arrow();
  const node = op.node;
  const exprs =
    node.kind === 'withColumn' ? [node.expr] : node.kind === 'select' ? node.columns.map((c) => c.expr) : [];
  const udfs = exprs.filter(isArrowUdf).map((u): ProjectionUdf => {
    const type = resolveType(u.returns);
    const input = [...u.input];
    let last: { batch: RecordBatch; table: Table } | null = null;
    return {
      fn: u.fn,
      type,
      arrayType:
        A.DataType.isFloat(type) || (A.DataType.isInt(type) && type.bitWidth < 64)
          ? ((type as { ArrayType?: unknown }).ArrayType ?? null)
          : null,
      owner: `arrowUdf '${u.name}' (${node.kind}#${op.id})`,
      tableOf: (batch) => {
        if (last?.batch === batch) return last.table;
        // A UDF that reads every column of the request, in order (the usual case), gets it whole.
        const whole =
          input.length === batch.numCols && input.every((c, i) => batch.schema.fields[i]!.name === c);
        last = { batch, table: tableOf(whole ? batch : batch.select(input)) };
        return last.table;
      },
    };
  });
  if (udfs.length === 0) throw new Error(`internal: ${node.kind}#${op.id} runs no Arrow code`);
  return udfs;
}

/** mapInArrow's answer as record batches: a batch, a table, an iterable of them, or nothing. */
function answerBatches(result: unknown, owner: string): RecordBatch[] {
  const A = arrow();
  if (result == null) return [];
  if (result instanceof A.RecordBatch) return [result];
  if (result instanceof A.Table) return result.batches;
  if (typeof (result as Iterable<unknown>)[Symbol.iterator] === 'function') {
    const out: RecordBatch[] = [];
    for (const item of result as Iterable<unknown>) {
      if (item instanceof A.RecordBatch) out.push(item);
      else if (item instanceof A.Table) out.push(...item.batches);
      else throw notBatches(owner, item);
    }
    return out;
  }
  throw notBatches(owner, result);
}

function notBatches(owner: string, value: unknown): MillraceError {
  return new MillraceError(
    ErrorCode.INVALID_ROW,
    `${owner} must return an Arrow RecordBatch, a Table or an iterable of them, got ${
      value === null
        ? 'null'
        : typeof value === 'object'
          ? (value.constructor?.name ?? 'object')
          : typeof value
    }`,
  );
}
