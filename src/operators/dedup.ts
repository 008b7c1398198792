import {
  type AnalyzedPlan,
  eventTimeWatermarks,
  type PlannedOperator,
  type WatermarkInput,
  watermarkColumnReaches,
} from '../plan/analyze.js';
import { rowKey } from '../plan/physical.js';
import { InMemoryStateStore } from '../state/state-store.js';
import { TimeIndex } from '../state/time-index.js';
import type { OperatorContext, RowSink, StatefulOperator, StateOperatorCounters } from './contract.js';
import { rowTime } from './row-time.js';

/**
 * `dropDuplicates(columns)` and `dropDuplicatesWithinWatermark(columns)`: the first row of each key
 * goes on at once (in both execution modes), later ones are dropped.
 *
 * - `dropDuplicates` with a watermark on one of its columns (for the whole row as the key: on a
 *   column that reaches it unchanged): rows at or below the watermark are late, and a key is
 *   forgotten once the watermark reaches its event time (no later row can repeat it without being
 *   late). Without such a watermark every key is kept for ever.
 * - `dropDuplicatesWithinWatermark`: a key is kept until the watermark reaches its first row's event
 *   time plus the watermark delay; rows at or below the watermark are late.
 */
export class DedupOperator implements StatefulOperator {
  readonly stateful = true;
  readonly store = new InMemoryStateStore<unknown>(16);
  private readonly expiries = new TimeIndex();
  private readonly key: (row: unknown) => string;
  /** The watermark that bounds the state, if any: its column and how long past it a key lives. */
  private readonly eventTime: { column: string; keepMs: number } | null;
  private dropped = 0;
  private duplicates = 0;

  constructor(
    private readonly op: PlannedOperator<'dedup'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
    plan: AnalyzedPlan,
  ) {
    const { keys, withinWatermark } = op.node;
    this.key =
      keys.length === 0
        ? rowKey
        : (row) => JSON.stringify(keys.map((k) => (row as Record<string, unknown> | null)?.[k] ?? null));
    const above: WatermarkInput[] = plan.watermarksAbove[op.id]!.map((i) => plan.watermarks[i]!);
    // The whole row as the key holds every column, so a watermarked one that reaches this far
    // bounds it, as Spark's dropDuplicates() does.
    // With key columns, the first that holds a watermarked event time (a copy of one, or the
    // windowTime of an aggregation's window, counts).
    const timeKey = keys.find((k) => eventTimeWatermarks(plan, op, k).length > 0);
    const bound = withinWatermark
      ? above[0]
      : keys.length === 0
        ? above.find((w) => watermarkColumnReaches(plan, op, w))
        : timeKey === undefined
          ? undefined
          : eventTimeWatermarks(plan, op, timeKey)[0];
    this.eventTime =
      bound === undefined
        ? null
        : {
            column: withinWatermark ? bound.column : (timeKey ?? bound.column),
            keepMs: withinWatermark ? bound.delayMs : 0,
          };
  }

  push(row: unknown): void {
    let expiry = Number.POSITIVE_INFINITY;
    const et = this.eventTime;
    if (et !== null) {
      const t = rowTime(row, et.column, this.op, this.ctx, 'event time');
      if (Number.isNaN(t)) return;
      if (t <= this.ctx.lateWatermark()) {
        this.dropped++;
        this.ctx.lateRow(this.op, row);
        return;
      }
      expiry = t + et.keepMs;
    }
    let key: string;
    try {
      key = this.key(row);
    } catch (e) {
      this.ctx.badRecord(this.op, row, e);
      return;
    }
    if (this.store.get(key) !== undefined) {
      this.duplicates++;
      return;
    }
    this.store.put(key, expiry);
    if (expiry !== Number.POSITIVE_INFINITY) this.expiries.add(expiry, key);
    this.next.push(row);
  }

  onWatermark(watermark: number): void {
    this.expiries.closeUpTo(watermark, (key, expiry) => {
      if (this.store.get(key) === expiry) this.store.remove(key);
    });
  }

  restored(): void {
    const times: number[] = [];
    const keys: string[] = [];
    for (const [key, expiry] of this.store.entries()) {
      if (expiry === Number.POSITIVE_INFINITY) continue;
      times.push(expiry as number);
      keys.push(key);
    }
    this.expiries.addAll(times, keys);
  }

  finishBatch(watermark: number): void {
    this.onWatermark(watermark);
  }

  nextDue(): number {
    return this.expiries.first();
  }

  stateCounters(): StateOperatorCounters {
    const m = this.store.metrics();
    return {
      operatorId: this.op.id,
      operatorName: this.op.node.withinWatermark ? 'dedupeWithinWatermark' : 'dedupe',
      numRowsTotal: m.numRowsTotal,
      numRowsUpdated: m.numRowsUpdated,
      numRowsRemoved: m.numRowsRemoved,
      numRowsDroppedByWatermark: this.dropped,
      memoryUsedBytes: m.memoryUsedBytes,
      numDroppedDuplicateRows: this.duplicates,
    };
  }
}
