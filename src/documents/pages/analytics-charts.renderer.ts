import { escapeHtml } from '../html.js';

/**
 * Small SVG charts drawn on the server, for the seller dashboard: plain markup, no script, no
 * library. Each chart scales to its container (a viewBox, `width:100%` in the page's CSS), so a
 * phone shows the whole chart; every text (labels, titles) is escaped, as a seller's skill titles
 * are its own text. Each bar and point carries a `<title>` so its exact value is one hover or tap
 * away, and the chart as a whole has an accessible name.
 */

export interface Datum {
  label: string;
  value: number;
}

export interface ChartOptions {
  /** The chart's accessible name (role="img"). */
  title: string;
  /** How a value is written in labels and tooltips. */
  format?: (value: number) => string;
  width?: number;
  height?: number;
}

const e = (s: string) => escapeHtml(s);
const plain = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));
/** Coordinates in the SVG, rounded: shorter markup, same picture. */
const r = (n: number) => Math.round(n * 10) / 10;

function frame(o: ChartOptions, width: number, height: number, inner: string, cls: string): string {
  return `<svg class="chart ${cls}" viewBox="0 0 ${width} ${height}" preserveAspectRatio="xMidYMid meet" role="img" aria-label="${e(o.title)}" xmlns="http://www.w3.org/2000/svg"><title>${e(o.title)}</title>${inner}</svg>`;
}

function empty(o: ChartOptions, width: number, height: number, cls: string): string {
  return frame(
    o,
    width,
    height,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#f6f8fa" rx="6"/><text x="${width / 2}" y="${height / 2}" text-anchor="middle" dominant-baseline="middle" font-size="16" fill="#59636e">No data yet</text>`,
    `${cls} empty`,
  );
}

/**
 * Vertical bars, one per datum, in order (days of revenue). The largest value is the top of the
 * scale; the first, middle and last labels are written under the axis. All-zero or no data draws
 * the empty chart.
 */
export function barChart(data: Datum[], o: ChartOptions): string {
  const width = o.width ?? 480;
  const height = o.height ?? 200;
  const fmt = o.format ?? plain;
  const max = Math.max(0, ...data.map((d) => (Number.isFinite(d.value) ? d.value : 0)));
  if (!data.length || max <= 0) return empty(o, width, height, 'bars');
  const left = 8;
  const top = 24;
  const bottom = 28;
  const plotW = width - left * 2;
  const plotH = height - top - bottom;
  const step = plotW / data.length;
  const barW = Math.max(1, step * 0.8);
  const bars = data
    .map((d, i) => {
      const v = Number.isFinite(d.value) && d.value > 0 ? d.value : 0;
      const h = (v / max) * plotH;
      return `<rect x="${r(left + i * step + (step - barW) / 2)}" y="${r(top + plotH - h)}" width="${r(barW)}" height="${r(h)}" fill="#1f883d"><title>${e(d.label)}: ${e(fmt(v))}</title></rect>`;
    })
    .join('');
  const ticks = [...new Set([0, Math.floor((data.length - 1) / 2), data.length - 1])]
    .map((i) => {
      const anchor = i === 0 ? 'start' : i === data.length - 1 ? 'end' : 'middle';
      const x = i === 0 ? left : i === data.length - 1 ? width - left : left + i * step + step / 2;
      return `<text x="${r(x)}" y="${height - 8}" text-anchor="${anchor}" font-size="13" fill="#59636e">${e(data[i]?.label ?? '')}</text>`;
    })
    .join('');
  const axis = `<line x1="${left}" y1="${top + plotH}" x2="${width - left}" y2="${top + plotH}" stroke="#d0d7de"/><text x="${left}" y="16" font-size="13" fill="#59636e">max ${e(fmt(max))}</text>`;
  return frame(o, width, height, `${axis}${bars}${ticks}`, 'bars');
}

/**
 * Horizontal bars with their label above and value beside, one row per datum (the funnel's steps,
 * the referrers): labels stay readable at any width because they never share a line with a bar.
 */
export function horizontalBars(data: Datum[], o: ChartOptions): string {
  const width = o.width ?? 400;
  const row = 44;
  const height = Math.max(row, data.length * row) + 8;
  const fmt = o.format ?? plain;
  const max = Math.max(0, ...data.map((d) => (Number.isFinite(d.value) ? d.value : 0)));
  if (!data.length || max <= 0) return empty(o, width, o.height ?? 120, 'hbars');
  const valueW = 90;
  const rows = data
    .map((d, i) => {
      const v = Number.isFinite(d.value) && d.value > 0 ? d.value : 0;
      const y = 4 + i * row;
      const w = Math.max(v > 0 ? 2 : 0, (v / max) * (width - valueW - 8));
      return `<text x="0" y="${y + 14}" font-size="13" fill="#1f2328">${e(d.label)}</text><rect x="0" y="${y + 20}" width="${r(w)}" height="16" rx="3" fill="#0969da"><title>${e(d.label)}: ${e(fmt(v))}</title></rect><text x="${r(w + 8)}" y="${y + 33}" font-size="14" fill="#59636e">${e(fmt(v))}</text>`;
    })
    .join('');
  return frame(o, width, height, rows, 'hbars');
}

/**
 * A line through points on a fixed scale (`min`..`max`: ratings from 1 to 5), each point a circle
 * with its value; a single point draws as its circle alone.
 */
export function lineChart(data: Datum[], o: ChartOptions & { min: number; max: number }): string {
  const width = o.width ?? 480;
  const height = o.height ?? 200;
  const fmt = o.format ?? plain;
  const points = data.filter((d) => Number.isFinite(d.value));
  if (!points.length) return empty(o, width, height, 'line');
  const left = 28;
  const right = 12;
  const top = 16;
  const bottom = 28;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const span = o.max - o.min || 1;
  const xy = points.map((d, i) => {
    const v = Math.min(o.max, Math.max(o.min, d.value));
    const x = points.length === 1 ? left + plotW / 2 : left + (i / (points.length - 1)) * plotW;
    return { x, y: top + plotH - ((v - o.min) / span) * plotH, d };
  });
  const grid = [o.min, (o.min + o.max) / 2, o.max]
    .map((v) => {
      const y = top + plotH - ((v - o.min) / span) * plotH;
      return `<line x1="${left}" y1="${r(y)}" x2="${width - right}" y2="${r(y)}" stroke="#eaeef2"/><text x="${left - 6}" y="${r(y + 4)}" text-anchor="end" font-size="12" fill="#59636e">${e(fmt(v))}</text>`;
    })
    .join('');
  const path =
    xy.length > 1
      ? `<polyline fill="none" stroke="#8250df" stroke-width="2.5" points="${xy.map((p) => `${r(p.x)},${r(p.y)}`).join(' ')}"/>`
      : '';
  const dots = xy
    .map(
      (p) =>
        `<circle cx="${r(p.x)}" cy="${r(p.y)}" r="5" fill="#8250df"><title>${e(p.d.label)}: ${e(fmt(p.d.value))}</title></circle>`,
    )
    .join('');
  const first = xy[0];
  const last = xy[xy.length - 1];
  const labels =
    first && last
      ? `<text x="${left}" y="${height - 8}" font-size="13" fill="#59636e">${e(first.d.label)}</text>${xy.length > 1 ? `<text x="${width - right}" y="${height - 8}" text-anchor="end" font-size="13" fill="#59636e">${e(last.d.label)}</text>` : ''}`
      : '';
  return frame(o, width, height, `${grid}${path}${dots}${labels}`, 'line');
}
