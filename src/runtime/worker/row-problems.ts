import type { ErrorLocation, SerializedError } from '../../errors.js';
import { serializeError } from '../../errors.js';
import type { OperatorRef } from '../../operators/contract.js';
import { FrameKind } from '../channel/frame-kind.js';
import type { DeadLetter, LateRow } from '../messages.js';
import type { HostContext } from './host-context.js';
import type { RowMeta } from './row-meta.js';

/** A failure already located and serialised by the task; the host reports it as is. */
export class TaskFailure extends Error {
  constructor(readonly serialized: SerializedError) {
    super(serialized.message);
  }
}

/** The task a row belongs to, as far as {@link RowProblems} needs it. */
interface RowSite {
  readonly index: number;
  readonly stageId: number;
  readonly partition: number;
  readonly meta: RowMeta;
}

/**
 * What happens to one task's rows that go wrong: a row user code threw on follows the query's
 * `onBadRecord` (fail the task, skip and count, or dead-letter and count), a row behind the
 * watermark goes to the late rows if the query asks (`onLateRow: 'sideOutput'`).
 */
export class RowProblems {
  skipped = 0;
  deadLettered = 0;

  constructor(
    private readonly host: HostContext,
    private readonly site: RowSite,
  ) {}

  /** @param userCode the error came from user code (not input the engine could not read). */
  badRecord(op: OperatorRef, row: unknown, error: unknown, userCode = true): void {
    const { site, host } = this;
    const location = rowLocation(op, site.stageId, site.partition, site.meta);
    switch (host.onBadRecord) {
      case 'fail':
        throw new TaskFailure(serializeError(error, { ...location, userCode }));
      case 'skip':
        this.skipped++;
        return;
      case 'deadLetter': {
        this.deadLettered++;
        const letter = deadLetterOf(error, location, row, host.clock.now());
        try {
          host.result.writeValue(FrameKind.DEAD_LETTER, letter, site.index);
        } catch {
          // The row itself cannot be encoded (a function, a symbol...): keep its text instead.
          host.result.writeValue(FrameKind.DEAD_LETTER, { ...letter, row: String(row) }, site.index);
        }
        return;
      }
    }
  }

  lateRow(op: OperatorRef, row: unknown, watermark: number): void {
    if (this.host.onLateRow !== 'sideOutput') return;
    const { site } = this;
    const location = rowLocation(op, site.stageId, site.partition, site.meta);
    const late = lateRowOf(location, row, watermark, this.host.clock.now());
    this.host.result.writeValue(FrameKind.LATE_ROW, late, site.index);
  }
}

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
  timestamp: number,
): LateRow {
  return {
    row,
    watermark,
    operator: location.operator,
    stage: location.stage,
    partition: location.partition,
    sourceOffset: location.sourceOffset,
    timestamp,
  };
}
