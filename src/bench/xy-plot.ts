import { escapeXml, num } from './latency-plot.js';

/**
 * A generic x–y plot as hand-written SVG, beside latency-plot.ts: one or more panels stacked in one
 * document, each with its own axes (linear or log10), lines with point markers, and horizontal
 * reference lines (a baseline's figure, drawn dashed across the whole panel).
 */

export interface XySeries {
  name: string;
  color: string;
  /** x ascending; a point with a value that is not finite (or not positive on a log axis) is skipped. */
  points: readonly { x: number; y: number }[];
}

export interface ReferenceLine {
  name: string;
  color: string;
  y: number;
}

export interface XyAxis {
  label: string;
  log: boolean;
  /** A tick's label. */
  format(value: number): string;
}

export interface XyPanel {
  title: string;
  x: XyAxis;
  y: XyAxis;
  series: readonly XySeries[];
  references?: readonly ReferenceLine[];
}

/** An axis' range and its ticks. */
export interface AxisScale {
  min: number;
  max: number;
  ticks: number[];
  /** The position of a value in [0, 1] along the axis. */
  at(value: number): number;
}

/**
 * The range of an axis holding `values`: whole decades on a log axis (at least one), from 0 to a
 * round figure (1, 2 or 5 × 10^n per tick, about 5 ticks) on a linear one.
 */
export function axisScale(values: readonly number[], log: boolean): AxisScale {
  if (log) {
    const positive = values.filter((v) => Number.isFinite(v) && v > 0);
    const lo = positive.length > 0 ? Math.floor(Math.log10(Math.min(...positive)) + 1e-9) : 0;
    const hi =
      positive.length > 0 ? Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...positive)) - 1e-9)) : 1;
    const ticks: number[] = [];
    for (let d = lo; d <= hi; d++) ticks.push(10 ** d);
    return {
      min: 10 ** lo,
      max: 10 ** hi,
      ticks,
      at: (v) => (Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo),
    };
  }
  const finite = values.filter((v) => Number.isFinite(v));
  const top = Math.max(0, ...finite);
  const raw = top > 0 ? top / 5 : 1;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((k) => k * magnitude >= raw) ?? 10) * magnitude;
  const max = Math.max(step, Math.ceil(top / step - 1e-9) * step);
  const ticks: number[] = [];
  for (let t = 0; t <= max + step / 2; t += step) ticks.push(t);
  return { min: 0, max, ticks, at: (v) => v / max };
}

const WIDTH = 760;
const PANEL_HEIGHT = 380;
const HEADER = 56;
const LEFT = 88;
const RIGHT = 24;
const PANEL_TOP = 36;
const PANEL_BOTTOM = 76;

/** About how wide a character of the 12-px legend is, to lay its entries out in a row. */
const LEGEND_CHAR_PX = 6.5;

const drawable = (v: number, log: boolean) => Number.isFinite(v) && (!log || v > 0);

/** Renders the panels, one under the other, as an SVG document. */
export function renderXyPlot(title: string, subtitle: string, panels: readonly XyPanel[]): string {
  const height = HEADER + panels.length * PANEL_HEIGHT;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${WIDTH / 2}" y="44" text-anchor="middle" fill="#555555">${escapeXml(subtitle)}</text>`,
  ];
  panels.forEach((p, i) => {
    out.push(...renderPanel(p, HEADER + i * PANEL_HEIGHT));
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function renderPanel(p: XyPanel, y0: number): string[] {
  const top = y0 + PANEL_TOP;
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = PANEL_HEIGHT - PANEL_TOP - PANEL_BOTTOM;
  const references = p.references ?? [];
  const xs = p.series.flatMap((s) => s.points.map((q) => q.x)).filter((v) => drawable(v, p.x.log));
  const ys = [...p.series.flatMap((s) => s.points.map((q) => q.y)), ...references.map((r) => r.y)].filter(
    (v) => drawable(v, p.y.log),
  );
  const sx = axisScale(xs, p.x.log);
  const sy = axisScale(ys, p.y.log);
  const px = (v: number) => LEFT + sx.at(v) * plotW;
  const py = (v: number) => top + plotH - sy.at(v) * plotH;

  const out: string[] = [
    `<text x="${LEFT}" y="${top - 12}" font-size="14" font-weight="bold">${escapeXml(p.title)}</text>`,
  ];
  for (const t of sy.ticks) {
    const y = num(py(t));
    out.push(
      `<line x1="${LEFT}" y1="${y}" x2="${LEFT + plotW}" y2="${y}" stroke="#dddddd"/>`,
      `<text x="${LEFT - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${escapeXml(p.y.format(t))}</text>`,
    );
  }
  for (const t of sx.ticks) {
    const x = num(px(t));
    out.push(
      `<line x1="${x}" y1="${top}" x2="${x}" y2="${top + plotH}" stroke="#dddddd"/>`,
      `<text x="${x}" y="${top + plotH + 18}" text-anchor="middle">${escapeXml(p.x.format(t))}</text>`,
    );
  }
  out.push(
    `<rect x="${LEFT}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333333"/>`,
    `<text x="${LEFT + plotW / 2}" y="${top + plotH + 40}" text-anchor="middle">${escapeXml(p.x.label)}</text>`,
    `<text transform="translate(18 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(p.y.label)}</text>`,
  );
  const legend: { name: string; color: string; dashed: boolean }[] = [];
  for (const r of references) {
    if (!drawable(r.y, p.y.log)) continue;
    const y = num(py(r.y));
    out.push(
      `<line x1="${LEFT}" y1="${y}" x2="${LEFT + plotW}" y2="${y}" stroke="${r.color}" stroke-width="1.5" stroke-dasharray="6 4"/>`,
    );
    legend.push({ name: r.name, color: r.color, dashed: true });
  }
  for (const s of p.series) {
    const points = s.points.filter((q) => drawable(q.x, p.x.log) && drawable(q.y, p.y.log));
    if (points.length > 0) {
      const d = points.map((q, j) => `${j === 0 ? 'M' : 'L'}${num(px(q.x))} ${num(py(q.y))}`).join(' ');
      out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
      for (const q of points) {
        out.push(`<circle cx="${num(px(q.x))}" cy="${num(py(q.y))}" r="3.5" fill="${s.color}"/>`);
      }
    }
    legend.push({ name: s.name, color: s.color, dashed: false });
  }
  // The legend: one row under the x axis' label, out of the data's way.
  let lx = LEFT;
  const ly = top + plotH + 62;
  for (const l of legend) {
    const dash = l.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${l.color}" stroke-width="2"${dash}/>`,
      `<text x="${lx + 30}" y="${ly}" dominant-baseline="middle">${escapeXml(l.name)}</text>`,
    );
    lx += 30 + Math.ceil(l.name.length * LEGEND_CHAR_PX) + 24;
  }
  return out;
}
