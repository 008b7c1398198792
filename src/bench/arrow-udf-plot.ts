import { formatCount, formatRate } from './format.js';
import { msLabel } from './latency-plot.js';
import { renderXyPlot, type XyAxis, type XyPanel } from './xy-plot.js';

/** Where an Arrow variant runs its UDF: on the task's thread (the default) or on a UDF thread. */
export type Placement = 'inline' | 'isolated';

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
  arrow: readonly (VariantFigures & { batchSize: number; placement: Placement })[];
}

/** Per placement: its p99 (and sustainable rate) colour, its p50 colour, its legend. */
const STYLE: Record<Placement, { color: string; p50: string; name: string }> = {
  inline: { color: '#1f6fd1', p50: '#7fa9e0', name: "task's thread" },
  isolated: { color: '#2e8b3d', p50: '#8cc796', name: 'UDF thread' },
};
const SCALAR_COLOR = '#d1491f';

const PLACEMENT_ORDER: readonly Placement[] = ['inline', 'isolated'];

const BATCH_AXIS: XyAxis = {
  label: 'arrowMaxRecordsPerBatch (rows per Arrow batch, log scale)',
  log: true,
  format: formatCount,
};

/**
 * The plot of `millrace bench arrow-udf`: p50 and p99 of the Arrow variants against the batch
 * size (log x and y axes), one pair of lines per placement, the scalar variant's p99 as a dashed
 * reference; and, when the sustainable rates were searched, those against the batch size (log
 * axes too), one line per placement, the scalar one as a reference.
 */
export function renderArrowUdfPlot(input: ArrowUdfPlotInput, subtitle: string): string {
  const placements = PLACEMENT_ORDER.filter((p) => input.arrow.some((a) => a.placement === p));
  const of = (p: Placement) => input.arrow.filter((a) => a.placement === p);
  const panels: XyPanel[] = [
    {
      title: `e2e latency at ${formatRate(input.rate)} rows/s`,
      x: BATCH_AXIS,
      y: { label: 'latency (log scale)', log: true, format: msLabel },
      series: placements.flatMap((p) => [
        {
          name: `Arrow UDF p99, ${STYLE[p].name}`,
          color: STYLE[p].color,
          points: of(p).map((a) => ({ x: a.batchSize, y: a.p99 })),
        },
        {
          name: `Arrow UDF p50, ${STYLE[p].name}`,
          color: STYLE[p].p50,
          points: of(p).map((a) => ({ x: a.batchSize, y: a.p50 })),
        },
      ]),
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
      series: placements
        .filter((p) => searched.some((a) => a.placement === p))
        .map((p) => ({
          name: `Arrow UDF, ${STYLE[p].name}`,
          color: STYLE[p].color,
          points: searched
            .filter((a) => a.placement === p)
            .map((a) => ({ x: a.batchSize, y: a.sustainable! })),
        })),
      references:
        scalarRate === null
          ? []
          : [{ name: `scalar UDF (${formatRate(scalarRate)} rows/s)`, color: SCALAR_COLOR, y: scalarRate }],
    });
  }
  return renderXyPlot('Arrow UDF batch size: latency and throughput', subtitle, panels);
}
