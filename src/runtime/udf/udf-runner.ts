import type { RecordBatch } from 'apache-arrow';
import { ErrorCode, MillraceError } from '../../errors.js';
import { arrow } from '../../operators/arrow/arrow-module.js';
import { tableOf } from '../../operators/arrow/column-table.js';
import { resolveType, resultVector } from '../../operators/arrow/columns.js';
import type { BatchSchema, ColumnsBatch } from '../../operators/arrow/ipc.js';
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
  const exprs =
    node.kind === 'withColumn' ? [node.expr] : node.kind === 'select' ? node.columns.map((c) => c.expr) : [];
  const udfs = exprs.filter(isArrowUdf).map((u) => ({
    fn: u.fn,
    input: [...u.input],
    type: resolveType(u.returns),
    owner: `arrowUdf '${u.name}' (${node.kind}#${op.id})`,
    /** The table of the last batch: a batch lent again (see RowColumns.toBatch) is given the same one. */
    last: null as { batch: RecordBatch; table: import('apache-arrow').Table } | null,
  }));
  if (udfs.length === 0) throw new Error(`internal: ${node.kind}#${op.id} runs no Arrow code`);
  // The answer's schema: one column per UDF, named by its place, of its declared type (which
  // resultVector checks each result against).
  const fields = udfs.map((u, k) => new A.Field(String(k), u.type, true));
  const answer: BatchSchema = { schema: new A.Schema(fields), struct: new A.Struct(fields) };
  return (batch) => {
    const columns: Record<string, import('apache-arrow').Vector> = {};
    let chunked = false;
    udfs.forEach((u, k) => {
      // A UDF that reads every column of the request, in order (the usual case), gets it whole.
      const whole =
        u.input.length === batch.numCols && u.input.every((c, i) => batch.schema.fields[i]!.name === c);
      let table = u.last?.batch === batch ? u.last.table : null;
      if (table === null) {
        table = tableOf(whole ? batch : batch.select(u.input));
        u.last = { batch, table };
      }
      const v = resultVector(u.fn(table), u.type, batch.numRows, u.owner);
      if (v.data.length !== 1) chunked = true;
      columns[String(k)] = v;
    });
    if (chunked) return new A.Table(columns).batches;
    return [
      { schema: answer, length: batch.numRows, children: Object.values(columns).map((v) => v.data[0]!) },
    ];
  };
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
