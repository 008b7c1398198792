import { ErrorCode, MillraceError } from '../errors.js';
import type { AnalyzedPlan, PlannedOperator } from '../plan/analyze.js';
import { toEventTime } from '../util/event-time.js';
import type { OperatorContext, RowSink } from './contract.js';

/** Event times seen since the last report (for progress' eventTime). */
export interface EventTimeStats {
  min: number;
  max: number;
  sum: number;
  count: number;
}

/**
 * `withWatermark(column, delay)`: passes rows through, tracking the largest event time this
 * partition has seen; when `max − delay` grows it tells the task, which carries the new value
 * in-band to every downstream task (they combine the partitions' values: WatermarkTracker). In a
 * task that sees the rows of several source partitions (after a `union` or `repartition` of
 * sources), it tells the task each row's value instead, which keeps one per source partition.
 */
export class WatermarkOperator implements RowSink {
  private readonly column: string;
  private readonly delay: number;
  private readonly input: number;
  /** The source carries the watermark (see WatermarkNode.carried): rows only count for stats. */
  private readonly carried: boolean;
  /** The task keeps a watermark per source partition (OperatorContext.watermarksPerPartition). */
  private readonly perPartition: boolean;
  private max = Number.NEGATIVE_INFINITY;
  private stats: EventTimeStats = {
    min: Number.POSITIVE_INFINITY,
    max: Number.NEGATIVE_INFINITY,
    sum: 0,
    count: 0,
  };

  constructor(
    private readonly op: PlannedOperator<'watermark'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
    plan: AnalyzedPlan,
  ) {
    this.column = op.node.column;
    this.delay = op.node.delayMs;
    this.input = plan.watermarks.find((w) => w.operatorId === op.id)!.index;
    this.carried = op.node.carried === true;
    this.perPartition = !this.carried && ctx.watermarksPerPartition;
  }

  push(row: unknown): void {
    const raw = row == null ? undefined : (row as Record<string, unknown>)[this.column];
    if (raw != null) {
      const t = toEventTime(raw);
      if (Number.isNaN(t)) {
        this.ctx.badRecord(
          this.op,
          row,
          new MillraceError(
            ErrorCode.INVALID_ROW,
            `event time column '${this.column}' holds ${JSON.stringify(raw)}: expected ms since the epoch or a Date`,
          ),
        );
        return;
      }
      const s = this.stats;
      if (t < s.min) s.min = t;
      if (t > s.max) s.max = t;
      s.sum += t;
      s.count++;
      if (this.perPartition) this.ctx.advancePartitionWatermark(this.input, t - this.delay);
      if (t > this.max) {
        this.max = t;
        if (!this.carried && !this.perPartition) this.ctx.advanceWatermark(this.input, t - this.delay);
      }
    }
    this.next.push(row);
  }

  /** This partition's own watermark: the largest event time it saw − delay (−Infinity before any). */
  get partitionWatermark(): number {
    return this.max - this.delay;
  }

  /** Event times since the last call. */
  takeStats(): EventTimeStats {
    const s = this.stats;
    this.stats = { min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, sum: 0, count: 0 };
    return s;
  }
}
