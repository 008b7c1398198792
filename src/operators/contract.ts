/**
 * The operator contract: one required method. An operator gets a row, does its work and pushes
 * zero or more rows to the next element of the chain (another operator, or the task's output).
 * Operators are created once per task, so per-row work allocates nothing the operator itself
 * does not need.
 */
export interface RowSink {
  push(row: unknown): void;
}

/** What identifies an operator in errors and dead letters. */
export interface OperatorRef {
  readonly id: number;
  readonly node: { readonly kind: string; readonly label: string | undefined };
}

/** What the task offers its operators. */
export interface OperatorContext {
  /**
   * User code threw on `row`: applies the query's bad-record policy. With `fail` it throws (the
   * task fails with the operator, partition and offending row's offset); otherwise the row is
   * skipped or dead-lettered, counted, and the operator carries on with the next row.
   */
  badRecord(op: OperatorRef, row: unknown, error: unknown): void;
}
