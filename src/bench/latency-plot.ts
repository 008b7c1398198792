import type { Histogram } from 'hdr-histogram-js';

/**
 * Latency by percentile, the usual HdrHistogram plot, as hand-written SVG. The x axis is
 * `log10(1 / (1 − p))`, so 0 %, 90 %, 99 %, 99.9 %… are evenly spaced; the y axis is latency in ms
 * on a log scale (µs medians and ms tails both stay readable).
 */

export interface PlotSeries {
  name: string;
  color: string;
  /** (x = log10(1 / (1 − percentile / 100)), latency ms), x ascending. */
  points: readonly { x: number; ms: number }[];
}

/** Points per decade of the x axis. */
const STEPS_PER_NINE = 20;
/** Smallest latency drawn (the histograms' resolution is 1 µs). */
const FLOOR_MS = 0.001;

/** Samples a histogram recorded in µs along the percentile axis, up to where its data ends. */
export function percentileCurve(histogram: Histogram): { x: number; ms: number }[] {
  const count = histogram.totalCount;
  if (count === 0) return [];
  // Beyond 1 − 1/count every percentile is the maximum.
  const lastX = Math.max(1, Math.min(7, Math.log10(count)));
  const points: { x: number; ms: number }[] = [];
  for (let i = 0; i / STEPS_PER_NINE < lastX; i++) {
    const x = i / STEPS_PER_NINE;
    points.push({ x, ms: histogram.getValueAtPercentile(100 * (1 - 10 ** -x)) / 1000 });
  }
  points.push({ x: lastX, ms: histogram.maxValue / 1000 });
  return points;
}

/** The label of an x-axis tick: 0 → `0%`, 2 → `99%`, 4 → `99.99%`. */
export function nineLabel(nines: number): string {
  if (nines === 0) return '0%';
  return `${(100 * (1 - 10 ** -nines)).toFixed(Math.max(0, nines - 2))}%`;
}

/** A latency tick label given in ms: `500 µs`, `2 ms`, `1.5 s`. */
export function msLabel(ms: number): string {
  if (ms < 1) return `${+(ms * 1000).toPrecision(3)} µs`;
  if (ms < 1000) return `${+ms.toPrecision(3)} ms`;
  return `${+(ms / 1000).toPrecision(3)} s`;
}

export const escapeXml = (text: string): string => text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A coordinate with one decimal at most. */
export const num = (v: number): string => (Math.round(v * 10) / 10).toString();

/** Renders the series as an SVG document. */
export function renderLatencyPlot(title: string, subtitle: string, series: readonly PlotSeries[]): string {
  const width = 760;
  const height = 460;
  const left = 80;
  const right = 24;
  const top = 64;
  const bottom = 64;
  const plotW = width - left - right;
  const plotH = height - top - bottom;

  const all = series.flatMap((s) => s.points);
  const maxX = Math.max(2, Math.ceil(Math.max(0, ...all.map((p) => p.x)) - 1e-9));
  const values = all.map((p) => Math.max(FLOOR_MS, p.ms));
  const lowDecade = Math.floor(Math.log10(Math.min(1, ...values)));
  const highDecade = Math.max(lowDecade + 1, Math.ceil(Math.log10(Math.max(FLOOR_MS * 10, ...values))));
  const sx = (x: number) => left + (x / maxX) * plotW;
  const sy = (ms: number) =>
    top + plotH - ((Math.log10(Math.max(FLOOR_MS, ms)) - lowDecade) / (highDecade - lowDecade)) * plotH;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${width / 2}" y="44" text-anchor="middle" fill="#555555">${escapeXml(subtitle)}</text>`,
  );
  // Grid and axes.
  for (let d = lowDecade; d <= highDecade; d++) {
    const y = num(sy(10 ** d));
    out.push(
      `<line x1="${left}" y1="${y}" x2="${left + plotW}" y2="${y}" stroke="#dddddd"/>`,
      `<text x="${left - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${msLabel(10 ** d)}</text>`,
    );
    if (d < highDecade) {
      for (const k of [2, 5]) {
        const yy = num(sy(k * 10 ** d));
        out.push(`<line x1="${left}" y1="${yy}" x2="${left + plotW}" y2="${yy}" stroke="#f0f0f0"/>`);
      }
    }
  }
  for (let n = 0; n <= maxX; n++) {
    const x = num(sx(n));
    out.push(
      `<line x1="${x}" y1="${top}" x2="${x}" y2="${top + plotH}" stroke="#dddddd"/>`,
      `<text x="${x}" y="${top + plotH + 18}" text-anchor="middle">${nineLabel(n)}</text>`,
    );
  }
  out.push(
    `<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333333"/>`,
    `<text x="${left + plotW / 2}" y="${height - 16}" text-anchor="middle">percentile</text>`,
    `<text transform="translate(18 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">latency (log scale)</text>`,
  );
  // Lines and legend.
  series.forEach((s, i) => {
    if (s.points.length > 0) {
      const d = s.points.map((p, j) => `${j === 0 ? 'M' : 'L'}${num(sx(p.x))} ${num(sy(p.ms))}`).join(' ');
      out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    }
    const ly = top + 16 + i * 18;
    out.push(
      `<line x1="${left + 12}" y1="${ly}" x2="${left + 36}" y2="${ly}" stroke="${s.color}" stroke-width="2"/>`,
      `<text x="${left + 42}" y="${ly}" dominant-baseline="middle">${escapeXml(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
