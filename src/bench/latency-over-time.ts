import * as hdr from 'hdr-histogram-js';
import { msLabel } from './latency-plot.js';
import type { IntervalHistogram } from './types.js';
import { renderXyPlot } from './xy-plot.js';

/**
 * A run's progress intervals as an HdrHistogram interval log (`.hlog`, written by the library's
 * HistogramLogWriter): one compressed histogram per interval, values in µs, interval times in
 * seconds from the log's start time. HdrHistogram's tools (HistogramLogProcessor, the online
 * plotters) read it; `maxValueUnitRatio` 1000 makes each line's max read in ms.
 */
export function intervalLog(intervals: readonly IntervalHistogram[], comment: string): string {
  const chunks: string[] = [];
  const writer = new hdr.HistogramLogWriter((c) => chunks.push(c));
  const start = intervals[0]?.startMs ?? 0;
  writer.outputComment(comment);
  writer.outputComment('values in microseconds; the max column in milliseconds');
  writer.outputLogFormatVersion();
  writer.outputStartTime(start);
  writer.outputLegend();
  for (const i of intervals) {
    writer.outputIntervalHistogram(i.histogram, (i.startMs - start) / 1000, (i.endMs - start) / 1000, 1000);
  }
  return chunks.join('');
}

/** p50, p99 and max of each interval, against the seconds since the window began (log y axis). */
export function renderLatencyOverTime(
  title: string,
  subtitle: string,
  intervals: readonly IntervalHistogram[],
): string {
  const start = intervals[0]?.startMs ?? 0;
  const filled = intervals.filter((i) => i.histogram.totalCount > 0);
  const at = (p: number) =>
    filled.map((i) => ({
      x: (i.endMs - start) / 1000,
      y: Math.min(i.histogram.getValueAtPercentile(p), i.histogram.maxValue) / 1000,
    }));
  return renderXyPlot(title, subtitle, [
    {
      title: 'e2e latency per progress interval',
      x: { label: 'seconds into the measured window', log: false, format: (v) => `${+v.toFixed(1)}` },
      y: { label: 'latency (log scale)', log: true, format: msLabel },
      series: [
        {
          name: 'max',
          color: '#8a8a8a',
          points: filled.map((i) => ({ x: (i.endMs - start) / 1000, y: i.histogram.maxValue / 1000 })),
        },
        { name: 'p99', color: '#d1491f', points: at(99) },
        { name: 'p50', color: '#1f6fd1', points: at(50) },
      ],
    },
  ]);
}
