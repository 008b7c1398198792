import type { RecordBatch, Table, Vector } from 'apache-arrow';
import { arrow } from './arrow-module.js';

type TableClass = new (batch: RecordBatch) => Table;

let columnTable: TableClass | undefined;

/**
 * The table an Arrow UDF is given for `batch`: Arrow's Table, whose column vectors are made once
 * each. Arrow makes a new Vector (with closures of its own) on every `getChild` call; a model
 * that reads a dozen columns of a batch of one row would spend more on that than on its
 * arithmetic. The table is made once for a batch lent again (see RowColumns.toBatch), so its
 * vectors are read again over the batch's new values.
 */
export function tableOf(batch: RecordBatch): Table {
  columnTable ??= class ColumnTable extends (arrow().Table as unknown as TableClass) {
    private readonly vectors: (Vector | null | undefined)[] = [];

    override getChildAt(index: number): Vector | null {
      let v = this.vectors[index];
      if (v === undefined) {
        v = super.getChildAt(index);
        this.vectors[index] = v;
      }
      return v as Vector | null;
    }
  };
  return new columnTable(batch);
}
