import type { Table } from 'apache-arrow';
import { arrowUdf, defineJob, sources } from '../index.js';
import { blackholeSink, probedGenerate } from './job-probes.js';

/** Features per row: `f0` … `f15`. */
export const FEATURES = 16;
export const FEATURE_COLUMNS: readonly string[] = Array.from({ length: FEATURES }, (_, k) => `f${k}`);

/** The model's weights: fixed, so every variant computes the same scores. */
export const WEIGHTS: Float64Array = Float64Array.from(
  { length: FEATURES },
  (_, k) => ((k % 5) - 2) / (k + 1),
);

export interface FeatureRow {
  id: number;
  f0: number;
  f1: number;
  f2: number;
  f3: number;
  f4: number;
  f5: number;
  f6: number;
  f7: number;
  f8: number;
  f9: number;
  f10: number;
  f11: number;
  f12: number;
  f13: number;
  f14: number;
  f15: number;
}

/** Feature `k` of the row at `offset`: a deterministic value in [−1, 1) (a multiplicative hash). */
export function feature(offset: number, k: number): number {
  const h = Math.imul((offset + 1) ^ Math.imul(k + 1, 0x85ebca6b), 0x9e3779b1) >>> 0;
  return h / 2 ** 31 - 1;
}

/** The row at `offset` of a partition: its id and 16 features. */
export function featureRow(_partition: number, offset: number): FeatureRow {
  return {
    id: offset,
    f0: feature(offset, 0),
    f1: feature(offset, 1),
    f2: feature(offset, 2),
    f3: feature(offset, 3),
    f4: feature(offset, 4),
    f5: feature(offset, 5),
    f6: feature(offset, 6),
    f7: feature(offset, 7),
    f8: feature(offset, 8),
    f9: feature(offset, 9),
    f10: feature(offset, 10),
    f11: feature(offset, 11),
    f12: feature(offset, 12),
    f13: feature(offset, 13),
    f14: feature(offset, 14),
    f15: feature(offset, 15),
  };
}

const W = WEIGHTS;

/** The score of one row, on the task thread: the dot product of its features with the weights. */
export function scoreRow(r: FeatureRow): number {
  return (
    W[0]! * r.f0 +
    W[1]! * r.f1 +
    W[2]! * r.f2 +
    W[3]! * r.f3 +
    W[4]! * r.f4 +
    W[5]! * r.f5 +
    W[6]! * r.f6 +
    W[7]! * r.f7 +
    W[8]! * r.f8 +
    W[9]! * r.f9 +
    W[10]! * r.f10 +
    W[11]! * r.f11 +
    W[12]! * r.f12 +
    W[13]! * r.f13 +
    W[14]! * r.f14 +
    W[15]! * r.f15
  );
}

/** The same score over an Arrow batch, column by column: one pass per feature column. */
export function scoreBatch(t: Table): Float64Array {
  const out = new Float64Array(t.numRows);
  for (let k = 0; k < FEATURES; k++) {
    const col = t.getChild(FEATURE_COLUMNS[k]!)!.toArray() as Float64Array;
    const w = W[k]!;
    for (let i = 0; i < out.length; i++) out[i]! += w * col[i]!;
  }
  return out;
}

/**
 * The job of `millrace bench arrow-udf`: rows of 16 generated features at a constant rate (one
 * generator partition), scored by a 16-feature dot product in `withColumn('score', …)`, then a
 * blackhole foreach sink that lets the engine record each row's e2e latency. Real-time mode, one
 * worker: the generator, the projection and the sink run fused in one task.
 *
 * Parameters: `rowsPerSecond` (default 10 000); `variant`: `scalar` (the score per row on the task
 * thread, no Arrow) or `arrow` (an Arrow UDF on the task thread, or with `isolate=true` on the
 * query's one UDF thread; `batch` rows per Arrow batch at most, the query's `arrowMaxRecordsPerBatch`); `spinMicros` (default: the engine's);
 * `clockChannel` (see job-probes.ts).
 */
export default defineJob((job) => {
  const variant = job.param('variant', 'arrow');
  const batch = job.param('batch', 1);
  const spinMicros = job.param('spinMicros', -1);
  const clockChannel = job.param('clockChannel', '');
  const source = job.readStream(
    sources.generator<FeatureRow>({
      name: 'features',
      rowsPerSecond: job.param('rowsPerSecond', 10_000),
      partitions: 1,
      generate: probedGenerate(clockChannel, featureRow),
    }),
  );
  const scored =
    variant === 'scalar'
      ? source.withColumn('score', scoreRow)
      : source.withColumn('score', arrowUdf(scoreBatch, { input: FEATURE_COLUMNS, returns: 'float64' }));
  const writer = scored
    .writeStream(blackholeSink(clockChannel))
    .queryName(`bench-arrow-udf-${variant}`)
    .options(
      variant === 'scalar'
        ? { workers: 1 }
        : {
            workers: 1,
            udfWorkers: 1,
            arrowMaxRecordsPerBatch: batch,
            isolateUdfs: job.param('isolate', 'false') === 'true',
          },
    );
  return spinMicros >= 0 ? writer.options({ spinMicros }) : writer;
});
