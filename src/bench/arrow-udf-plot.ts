import { formatCount, formatRate } from './format.js';
import { msLabel } from './latency-plot.js';
import { renderXyPlot, type XyAxis, type XyPanel } from './xy-plot.js';

/** The figures of one variant the plot draws (ms; rows/s, null when not searched). */
export interface VariantFigures {
  p50: number;
  p99: number;
  sustainable: number | null;
}

export interface ArrowUdfPlotInput {
  /** The constant rate of the latency runs. */
  rate: number;
  scalar: VariantFigures | null;
  arrow: readonly (VariantFigures & { batchSize: number })[];
}

const ARROW_COLOR = '#1f6fd1';
const P50_COLOR = '#7fa9e0';
const SCALAR_COLOR = '#d1491f';

const BATCH_AXIS: XyAxis = {
  label: 'arrowMaxRecordsPerBatch (rows per Arrow batch, log scale)',
  log: true,
  format: formatCount,
};

/**
 * The plot of `millrace bench arrow-udf`: p50 and p99 of the Arrow variants against the batch
 * size (log x and y axes), the scalar variant's p99 as a dashed reference; and, when the
 * sustainable rates were searched, those against the batch size (log axes too), the scalar one as
 * a reference.
 */
export function renderArrowUdfPlot(input: ArrowUdfPlotInput, subtitle: string): string {
  const panels: XyPanel[] = [
    {
      title: `e2e latency at ${formatRate(input.rate)} rows/s`,
      x: BATCH_AXIS,
      y: { label: 'latency (log scale)', log: true, format: msLabel },
      series: [
        {
          name: 'Arrow UDF p99',
          color: ARROW_COLOR,
          points: input.arrow.map((a) => ({ x: a.batchSize, y: a.p99 })),
        },
        {
          name: 'Arrow UDF p50',
          color: P50_COLOR,
          points: input.arrow.map((a) => ({ x: a.batchSize, y: a.p50 })),
        },
      ],
      references:
        input.scalar === null
          ? []
          : [
              {
                name: `scalar UDF p99 (${msLabel(input.scalar.p99)})`,
                color: SCALAR_COLOR,
                y: input.scalar.p99,
              },
            ],
    },
  ];
  const searched = input.arrow.filter((a) => a.sustainable !== null);
  if (searched.length > 0 || input.scalar?.sustainable != null) {
    const scalarRate = input.scalar?.sustainable ?? null;
    panels.push({
      title: 'highest sustainable rate (backlog bounded, p99 < 100 ms)',
      x: BATCH_AXIS,
      // Log scale: the variants' rates can lie decades apart; a variant with none is not drawn.
      y: { label: 'rows per second (log scale)', log: true, format: (v) => formatRate(v) },
      series: [
        {
          name: 'Arrow UDF',
          color: ARROW_COLOR,
          points: searched.map((a) => ({ x: a.batchSize, y: a.sustainable! })),
        },
      ],
      references:
        scalarRate === null
          ? []
          : [{ name: `scalar UDF (${formatRate(scalarRate)} rows/s)`, color: SCALAR_COLOR, y: scalarRate }],
    });
  }
  return renderXyPlot('Arrow UDF batch size: latency and throughput', subtitle, panels);
}
