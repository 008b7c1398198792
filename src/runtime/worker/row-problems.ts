import type { ErrorLocation } from '../../errors.js';
import { serializeError } from '../../errors.js';
import type { OperatorRef } from '../../operators/contract.js';
import type { DeadLetter, LateRow } from '../messages.js';
import type { RowMeta } from './row-meta.js';

/** Where a row was when something went wrong with it: operator, stage, partition, source offset. */
export function rowLocation(
  op: OperatorRef,
  stage: number,
  partition: number,
  meta: RowMeta,
): Required<Pick<ErrorLocation, 'operator' | 'stage' | 'partition' | 'sourceOffset'>> {
  return {
    operator: { id: op.id, kind: op.node.kind, ...(op.node.label ? { name: op.node.label } : {}) },
    stage,
    partition,
    sourceOffset: { source: meta.sourceIndex, partition: meta.sourcePartition, offset: meta.origin },
  };
}

/** The dead letter of a row user code threw on. */
export function deadLetterOf(
  error: unknown,
  location: ReturnType<typeof rowLocation>,
  row: unknown,
  timestamp: number,
): DeadLetter {
  const e = serializeError(error);
  return {
    error: { name: e.name, message: e.message, ...(e.code ? { code: e.code } : {}) },
    ...location,
    row,
    timestamp,
  };
}

/** The late-row record of a row that reached a stateful operator behind the watermark. */
export function lateRowOf(
  location: ReturnType<typeof rowLocation>,
  row: unknown,
  watermark: number,
): LateRow {
  return {
    row,
    watermark,
    operator: location.operator,
    partition: location.partition,
    sourceOffset: location.sourceOffset,
  };
}
