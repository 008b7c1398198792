import type { Aggregator } from '../api/aggregates.js';
import type { OutputMode } from '../api/output-mode.js';
import { isMicroBatch } from '../api/trigger.js';
import { type TimeWindow, windowStarts } from '../api/window.js';
import { type AnalyzedPlan, eventTimeWatermarks, type PlannedOperator } from '../plan/analyze.js';
import { InMemoryStateStore } from '../state/state-store.js';
import { toEventTime } from '../util/event-time.js';
import type { OperatorContext, RowSink, StatefulOperator, StateOperatorCounters } from './contract.js';

/** One group's state: its key values, its window, and one accumulator state per aggregate. */
interface Group {
  keys: unknown[];
  start: number;
  end: number;
  states: unknown[];
}

/**
 * `groupBy(...).agg({...})`. Each row updates its group (one per window it falls in). With a
 * watermark on the window's column (and not in complete mode), rows at or below the watermark in
 * force are late (dropped and counted, or sent to the late rows) and windows behind it are evicted.
 *
 * Real-time mode: in update mode the changed result row is emitted at once; in append mode a
 * window's row is emitted once, when the watermark passes its end.
 * Micro-batch mode: output waits for the end of the batch — update emits each group the batch
 * changed (its final value), append the windows the batch's watermark closed, complete the whole
 * result table.
 */
export class AggregateOperator implements StatefulOperator {
  readonly stateful = true;
  private readonly store: InMemoryStateStore<Group>;
  private readonly keyColumns: string[];
  private readonly window: TimeWindow | undefined;
  private readonly names: string[];
  private readonly aggregators: Aggregator[];
  private readonly columns: (string | undefined)[];
  private readonly mode: OutputMode;
  /** A watermark on the window's column: late rows are dropped, closed windows evicted. */
  private readonly watermarked: boolean;
  /** Window ends with open groups, ascending, and the groups of each. */
  private readonly ends: number[] = [];
  private readonly byEnd = new Map<number, string[]>();
  private readonly starts: number[] = [];
  private dropped = 0;
  /** Micro-batch mode: groups changed in the current batch, in the order they first changed. */
  private readonly changed: Set<string> | null;

  constructor(
    private readonly op: PlannedOperator<'aggregate'>,
    private readonly next: RowSink,
    private readonly ctx: OperatorContext,
    plan: AnalyzedPlan,
  ) {
    const node = op.node;
    this.keyColumns = [...node.keys];
    this.window = node.window;
    this.names = node.aggregates.map((a) => a.name);
    this.aggregators = node.aggregates.map((a) => a.spec.aggregator);
    this.columns = node.aggregates.map((a) => a.spec.column);
    this.mode = plan.definition.outputMode;
    // Complete mode keeps every group: the watermark neither drops rows nor evicts state there.
    this.watermarked =
      this.mode !== 'complete' &&
      node.window !== undefined &&
      eventTimeWatermarks(plan, op, node.window.column).length > 0;
    this.changed = isMicroBatch(plan.definition.trigger) ? new Set() : null;
    this.store = new InMemoryStateStore<Group>(48 + 24 * (node.keys.length + node.aggregates.length));
  }

  push(row: unknown): void {
    const r = row as Record<string, unknown>;
    const w = this.window;
    if (w === undefined) {
      this.update(r, 0, 0);
      return;
    }
    const raw = r?.[w.column];
    if (raw == null) return; // Spark: a row without event time belongs to no window.
    const t = toEventTime(raw);
    if (Number.isNaN(t)) {
      this.ctx.badRecord(
        this.op,
        row,
        new TypeError(
          `window column '${w.column}' holds ${JSON.stringify(raw)}: expected ms since the epoch or a Date`,
        ),
      );
      return;
    }
    if (this.watermarked && t <= this.ctx.watermark()) {
      this.dropped++;
      this.ctx.lateRow(this.op, row);
      return;
    }
    for (const start of windowStarts(w, t, this.starts)) this.update(r, start, start + w.sizeMs);
  }

  private update(row: Record<string, unknown>, start: number, end: number): void {
    const key = this.groupKey(row, start);
    let g = this.store.get(key);
    if (g === undefined) {
      g = {
        keys: this.keyColumns.map((k) => row?.[k]),
        start,
        end,
        states: this.aggregators.map((a) => a.zero()),
      };
      if (this.window !== undefined) this.indexEnd(end, key);
    }
    const states = g.states;
    for (let i = 0; i < states.length; i++) {
      const column = this.columns[i];
      states[i] = this.aggregators[i]!.add(states[i], column === undefined ? row : row?.[column]);
    }
    this.store.put(key, g);
    if (this.changed !== null) this.changed.add(key);
    else if (this.mode === 'update') this.next.push(this.resultRow(g));
  }

  onWatermark(watermark: number): void {
    this.closeUpTo(watermark);
  }

  finishBatch(watermark: number): void {
    if (this.mode === 'update') {
      for (const key of this.changed!) {
        const g = this.store.get(key);
        if (g !== undefined) this.next.push(this.resultRow(g));
      }
    } else if (this.mode === 'complete') {
      for (const [, g] of this.store.entries()) this.next.push(this.resultRow(g));
    }
    this.changed!.clear();
    this.closeUpTo(watermark);
  }

  nextDue(): number {
    return this.watermarked && this.ends.length > 0 ? this.ends[0]! : Number.POSITIVE_INFINITY;
  }

  /** Evicts the windows that end at or before `watermark`, emitting each in append mode. */
  private closeUpTo(watermark: number): void {
    if (!this.watermarked) return;
    const ends = this.ends;
    while (ends.length > 0 && ends[0]! <= watermark) {
      const end = ends.shift()!;
      for (const key of this.byEnd.get(end)!) {
        const g = this.store.get(key);
        if (g === undefined) continue;
        if (this.mode === 'append') this.next.push(this.resultRow(g));
        this.store.remove(key);
      }
      this.byEnd.delete(end);
    }
  }

  stateCounters(): StateOperatorCounters {
    const m = this.store.metrics();
    return {
      operatorId: this.op.id,
      operatorName: 'stateStoreSave',
      numRowsTotal: m.numRowsTotal,
      numRowsUpdated: m.numRowsUpdated,
      numRowsRemoved: m.numRowsRemoved,
      numRowsDroppedByWatermark: this.dropped,
      memoryUsedBytes: m.memoryUsedBytes,
    };
  }

  /** Output row: grouping columns by name, the window, then the aggregates by name. */
  private resultRow(g: Group): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < this.keyColumns.length; i++) out[this.keyColumns[i]!] = g.keys[i];
    if (this.window !== undefined) out.window = { start: g.start, end: g.end };
    for (let i = 0; i < this.names.length; i++)
      out[this.names[i]!] = this.aggregators[i]!.result(g.states[i]);
    return out;
  }

  private indexEnd(end: number, key: string): void {
    let list = this.byEnd.get(end);
    if (list === undefined) {
      list = [];
      this.byEnd.set(end, list);
      // Ends mostly arrive in order: insert from the back.
      const ends = this.ends;
      let i = ends.length;
      while (i > 0 && ends[i - 1]! > end) i--;
      ends.splice(i, 0, end);
    }
    list.push(key);
  }

  /** A stable string for (key values, window start); one column's value is kept as is. */
  private groupKey(row: Record<string, unknown>, start: number): string {
    const cols = this.keyColumns;
    if (cols.length === 1) {
      const v = row?.[cols[0]!];
      if (typeof v === 'string') return `s${start}|${v}`;
      if (typeof v === 'number') return `n${start}|${v}`;
    }
    return JSON.stringify([start, ...cols.map((c) => row?.[c] ?? null)]);
  }
}
