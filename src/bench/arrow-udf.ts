import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { aggregate, type SystemAggregate } from './aggregate.js';
import { type ArrowUdfPlotInput, type Placement, renderArrowUdfPlot } from './arrow-udf-plot.js';
import { type FindMaxResult, searchMaxRate } from './find-max.js';
import { formatRate } from './format.js';
import { type MachineInfo, machineInfo } from './machine.js';
import { type Measured, measureRun } from './measure.js';
import { runMillraceJob } from './millrace-run.js';
import { benchJob } from './millrace-scenario.js';
import { plotSubtitle, prepareOut, writeResult } from './scenario.js';
import type { BenchIO } from './types.js';

const JOB = new URL('./arrow-udf-job.js', import.meta.url);

export const ARROW_UDF_DESCRIPTION =
  'generator (1 partition, id + 16 features) → withColumn(score = 16-feature dot product) → ' +
  "blackhole foreach sink, real-time mode, 1 worker (fused task); arrow variants score on the task's thread, " +
  'arrow-…-isolated ones on 1 UDF thread (isolateUdfs)';

/** The defaults of the command line. */
export const ARROW_UDF_RATE = 10_000;
export const ARROW_UDF_BATCH_SIZES: readonly number[] = [1, 10, 100, 1000, 10_000];
/** --find-max: doubling from here… */
export const ARROW_UDF_SEARCH_START = 50_000;
/** …up to this rate at most. */
export const ARROW_UDF_SEARCH_CEILING = 4_000_000;
/** The p99 under which a probe counts as sustainable: ten times T1's, as a batch adds latency by design. */
export const ARROW_UDF_SUSTAINABLE_P99_MS = 100;

export type { Placement };
export const PLACEMENTS: readonly Placement[] = ['inline', 'isolated'];

/** One variant: the score per row on the task thread, or an Arrow UDF with a batch size and a placement. */
export type ArrowUdfVariant = { kind: 'scalar' } | { kind: 'arrow'; batchSize: number; placement: Placement };

/** `scalar`, `arrow-100`, `arrow-100-isolated`: the variant in progress lines, file names and JSON. */
export const variantName = (v: ArrowUdfVariant): string =>
  v.kind === 'scalar' ? 'scalar' : `arrow-${v.batchSize}${v.placement === 'isolated' ? '-isolated' : ''}`;

export interface ArrowUdfOptions {
  /** The constant rate of the latency runs (rows/s). */
  rate: number;
  durationMs: number;
  warmupMs: number;
  runs: number;
  /** `arrowMaxRecordsPerBatch` of the Arrow variants, one variant each. */
  batchSizes: number[];
  /** Also search each variant's highest sustainable rate. */
  findMax: boolean;
  /** Time budget of the whole search, shared equally by the variants. */
  maxTimeMs: number;
  spinMicros: number | undefined;
  /** Where the Arrow variants run their UDF: each batch size once per placement. */
  placements: Placement[];
  outDir: string;
  json: boolean;
}

export interface ArrowUdfVariantResult {
  variant: string;
  kind: ArrowUdfVariant['kind'];
  /** `arrowMaxRecordsPerBatch` (null: scalar). */
  batchSize: number | null;
  /** Where the UDF ran (null: scalar). */
  placement: Placement | null;
  /** Medians of the runs at the constant rate. */
  latency: SystemAggregate;
  findMax: FindMaxResult | null;
  /** This variant's p99 / the scalar variant's p99 at the rate. */
  p99VsScalar: number | null;
  /**
   * This variant's sustainable rate / that of the Arrow variant with batch size 1 in the same
   * placement (the scalar variant: the inline one's; null: not searched).
   */
  throughputVsBatch1: number | null;
}

export interface ArrowUdfResult {
  scenario: 'arrow-udf';
  description: string;
  machine: MachineInfo;
  settings: Omit<ArrowUdfOptions, 'json' | 'outDir'>;
  variants: ArrowUdfVariantResult[];
  files: string[];
}

/** The variants a run measures: scalar first, then Arrow by placement, then batch size. */
export function variantsOf(
  batchSizes: readonly number[],
  placements: readonly Placement[] = ['inline'],
): ArrowUdfVariant[] {
  return [
    { kind: 'scalar' },
    ...placements.flatMap((placement) =>
      batchSizes.map((batchSize): ArrowUdfVariant => ({ kind: 'arrow', batchSize, placement })),
    ),
  ];
}

/** The ratios of the report, from the variants' own figures. Pure. */
export function withRatios(
  variants: readonly Omit<ArrowUdfVariantResult, 'p99VsScalar' | 'throughputVsBatch1'>[],
): ArrowUdfVariantResult[] {
  const scalarP99 = variants.find((v) => v.kind === 'scalar')?.latency.median.p99;
  const batch1 = (placement: Placement) =>
    variants.find((v) => v.batchSize === 1 && v.placement === placement)?.findMax?.best;
  return variants.map((v) => {
    const base = batch1(v.placement ?? 'inline');
    return {
      ...v,
      p99VsScalar: scalarP99 !== undefined && scalarP99 > 0 ? v.latency.median.p99 / scalarP99 : null,
      throughputVsBatch1: v.findMax !== null && base !== undefined && base > 0 ? v.findMax.best / base : null,
    };
  });
}

/**
 * Runs the scenario: every variant at the constant rate (`runs` times, the variants' order
 * alternating between runs), then, with `findMax`, each variant's highest sustainable rate;
 * writes an HDR file per variant and run, the plot and the JSON result. Progress lines go to
 * standard error.
 */
export async function runArrowUdf(
  o: ArrowUdfOptions,
  io: BenchIO,
  signal: AbortSignal,
): Promise<ArrowUdfResult> {
  const machine = machineInfo();
  const outDir = await prepareOut(o.outDir);
  const variants = variantsOf(o.batchSizes, o.placements);
  const measure = (v: ArrowUdfVariant, rate: number, warmupMs: number, durationMs: number) =>
    measureRun(io, () =>
      runMillraceJob(
        {
          ...benchJob(
            JOB,
            o,
            v.kind === 'scalar'
              ? { variant: 'scalar' }
              : { variant: 'arrow', batch: v.batchSize, isolate: String(v.placement === 'isolated') },
          ),
          // A batch adds latency by design: a batch size is judged by its backlog and a p99 ten
          // times T1's bound.
          p99LimitMs: ARROW_UDF_SUSTAINABLE_P99_MS,
        },
        { rate, warmupMs, durationMs, signal },
      ),
    );

  const files: string[] = [];
  const measured = new Map<ArrowUdfVariant, Measured[]>(variants.map((v) => [v, []]));
  for (let r = 0; r < o.runs; r++) {
    const order = r % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      io.err(`arrow-udf: ${variantName(v)} at ${formatRate(o.rate)} rows/s, run ${r + 1} of ${o.runs}\n`);
      const m = await measure(v, o.rate, o.warmupMs, o.durationMs);
      measured.get(v)!.push(m);
      const file = join(outDir, `arrow-udf-${variantName(v)}-run${r + 1}.hgrm`);
      // Recorded in µs; the file is in ms, as HdrHistogram's plotters expect.
      await writeFile(file, m.histogram.outputPercentileDistribution(5, 1000));
      files.push(file);
    }
  }

  const searched = new Map<ArrowUdfVariant, FindMaxResult>();
  if (o.findMax) {
    const share = o.maxTimeMs / variants.length;
    for (const v of variants) {
      const found = await searchMaxRate(
        variantName(v),
        async (rate, warmupMs, durationMs) => (await measure(v, rate, warmupMs, durationMs)).run,
        {
          warmupMs: o.warmupMs,
          durationMs: o.durationMs,
          budgetMs: share,
          start: ARROW_UDF_SEARCH_START,
          ceiling: ARROW_UDF_SEARCH_CEILING,
          // Steps of 1 000 rows/s: a variant far slower than the start rate can still be placed.
          step: 1000,
        },
        io,
      );
      searched.set(v, found);
    }
  }

  const results = withRatios(
    variants.map((v) => ({
      variant: variantName(v),
      kind: v.kind,
      batchSize: v.kind === 'scalar' ? null : v.batchSize,
      placement: v.kind === 'scalar' ? null : v.placement,
      latency: aggregate(measured.get(v)!.map((m) => m.run)),
      findMax: searched.get(v) ?? null,
    })),
  );
  const { json: _json, outDir: _outDir, ...settings } = o;
  const result: ArrowUdfResult = {
    scenario: 'arrow-udf',
    description: ARROW_UDF_DESCRIPTION,
    machine,
    settings,
    variants: results,
    files,
  };
  const plot = join(outDir, 'arrow-udf.svg');
  await writeFile(
    plot,
    renderArrowUdfPlot(plotInput(result), plotSubtitle(o.runs, o.durationMs, o.warmupMs, machine)),
  );
  files.push(plot);
  return writeResult('arrow-udf', o.outDir, result, io);
}

/** What the plot shows of a result. */
export function plotInput(r: Pick<ArrowUdfResult, 'settings' | 'variants'>): ArrowUdfPlotInput {
  const figures = (v: ArrowUdfVariantResult) => ({
    p50: v.latency.median.p50,
    p99: v.latency.median.p99,
    sustainable: v.findMax === null ? null : v.findMax.best,
  });
  const scalar = r.variants.find((v) => v.kind === 'scalar');
  return {
    rate: r.settings.rate,
    scalar: scalar === undefined ? null : figures(scalar),
    arrow: r.variants
      .filter((v) => v.batchSize !== null)
      .map((v) => ({ batchSize: v.batchSize!, placement: v.placement!, ...figures(v) }))
      .sort((a, b) => a.batchSize - b.batchSize),
  };
}
