/**
 * The engine's aggregation operator alone, driven by hand as a task drives it — rows pushed,
 * watermarks given in stream order — for single-thread harnesses and operator tests. The query is
 * the benchmarks' windowed count: a count per card and 1-s window.
 */

import { agg, defineJob, sinks, sources, window } from '../../src/index.js';
import { AggregateOperator } from '../../src/operators/aggregate.js';
import type { RowSink } from '../../src/operators/contract.js';
import { type AnalyzedPlan, analyze, type PlannedOperator } from '../../src/plan/analyze.js';
import { buildJob } from '../../src/plan/job.js';

export interface CountPerCardAndSecond {
  /** Watermark delay: how long after its end a window is evicted. */
  readonly delay: string;
  readonly mode: 'update' | 'append';
  /** Where result rows go. */
  readonly out: RowSink;
  /** The watermark in force, which makes rows late (default: none is). */
  readonly watermark?: () => number;
  /** How many operators to build (a thread doing several shuffle partitions' work). */
  readonly partitions?: number;
}

/** `count()` per (1-s window of `ts`, `cardId`), as `millrace bench windowed-count` plans it. */
export function countPerCardAndSecond(o: CountPerCardAndSecond): AggregateOperator[] {
  const job = defineJob((j) =>
    j
      .readStream(
        sources.generator<{ cardId: string; ts: number }>({
          name: 'p',
          rowsPerSecond: 1,
          generate: () => ({ cardId: '', ts: 0 }),
        }),
      )
      .withWatermark('ts', o.delay)
      .groupBy(window('ts', '1 second'), 'cardId')
      .agg({ n: agg.count() })
      .writeStream(sinks.foreach({ process: () => {} }))
      .outputMode(o.mode),
  );
  const plan: AnalyzedPlan = analyze(buildJob(job, {}, 'aggregate-alone'));
  const op = plan.operators.find((p) => p.node.kind === 'aggregate') as PlannedOperator<'aggregate'>;
  const partitions = o.partitions ?? 1;
  const ctx = {
    badRecord: (_o: unknown, _r: unknown, e: unknown) => {
      throw e;
    },
    watermark: o.watermark ?? (() => Number.NEGATIVE_INFINITY),
    lateWatermark: o.watermark ?? (() => Number.NEGATIVE_INFINITY),
    advanceWatermark: () => {},
    watermarksPerPartition: false,
    advancePartitionWatermark: () => {},
    lateRow: () => {},
    processingTime: () => 0,
    partition: 0,
    partitions,
    staticTable: () => {
      throw new Error('no static table here');
    },
    meta: { sourceTime: 0, readTime: 0, origin: -1, sourceIndex: 0, sourcePartition: 0 },
    udfChannel: () => {
      throw new Error('no UDF channel here');
    },
    outputBlocked: () => false,
    microBatch: false,
    arrowMaxRecordsPerBatch: undefined,
  };
  return Array.from({ length: partitions }, () => new AggregateOperator(op, o.out, ctx, plan));
}
