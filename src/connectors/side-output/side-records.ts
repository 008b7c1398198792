/**
 * What the engine hands to the side outputs (and to the program: `q.deadLetters()`,
 * `q.lateRows()`, the `deadLetter` and `lateRow` events).
 */

/** A row that arrived behind the watermark, as the late-row output delivers it. */
export interface LateRow {
  readonly row: unknown;
  /** The watermark in force when it arrived. */
  readonly watermark: number;
  readonly operator: { readonly id: number; readonly kind: string; readonly name?: string };
  readonly stage: number;
  readonly partition: number;
  readonly sourceOffset?: { readonly source: number; readonly partition: number; readonly offset: number };
  /** Processing time (ms) when it arrived. */
  readonly timestamp: number;
}

/** Dead letter record as delivered to the driver (and to users). */
export interface DeadLetter {
  readonly error: { readonly name: string; readonly message: string; readonly code?: string };
  readonly operator: { readonly id: number; readonly kind: string; readonly name?: string };
  readonly stage: number;
  readonly partition: number;
  readonly sourceOffset?: { readonly source: number; readonly partition: number; readonly offset: number };
  readonly row: unknown;
  /** Processing time (ms) when it happened. */
  readonly timestamp: number;
}
