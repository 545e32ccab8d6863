import { html, type Html } from './html.js';

// Charts as server-rendered SVG: numbers in, markup out, no script and no chart library.
// Every text (labels, tooltips) goes through `html`, which escapes it; colours are classes
// the style sheet gives, so the page's Content-Security-Policy needs no inline style.

/** The drawing area of a chart, in SVG user units, and the room kept for the axis labels. */
export interface Frame {
  width: number;
  height: number;
}

const pad = { left: 52, right: 8, top: 8, bottom: 20 };

/** The smallest "round" number (1, 2 or 5 × a power of ten) at or above `max`; 1 for nothing. */
export function niceMax(max: number): number {
  if (!(max > 0) || !Number.isFinite(max)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max - 1e-12 * power) return step * power;
  return 10 * power;
}

/** Rounds to two decimals: coordinates stay short, and equal inputs draw equal markup. */
const r2 = (n: number) => Math.round(n * 100) / 100;

/** A value's y in the frame: 0 at the bottom of the plot, `top` at its top. */
function yOf(frame: Frame, top: number, value: number): number {
  const plot = frame.height - pad.top - pad.bottom;
  return r2(pad.top + plot - (Math.max(0, Math.min(value, top)) / top) * plot);
}

/** The y axis: gridlines and labels at 0, half and the top. */
function yAxis(frame: Frame, top: number, format: (n: number) => string): Html {
  return html`<g class="axis">${[0, top / 2, top].map(
    (v) =>
      html`<line x1="${pad.left}" x2="${frame.width - pad.right}" y1="${yOf(frame, top, v)}" y2="${yOf(frame, top, v)}"></line><text x="${pad.left - 4}" y="${yOf(frame, top, v) + 4}" text-anchor="end">${format(v)}</text>`,
  )}</g>`;
}

/** Labels under the x axis: the first, the middle and the last slot's. */
function xAxis(frame: Frame, labels: readonly string[], xOf: (i: number) => number): Html {
  const n = labels.length;
  const shown = n === 0 ? [] : [...new Set([0, Math.floor((n - 1) / 2), n - 1])];
  const anchor = (i: number) => (i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle');
  return html`<g class="axis">${shown.map(
    (i) => html`<text x="${xOf(i)}" y="${frame.height - 4}" text-anchor="${anchor(i)}">${labels[i] ?? ''}</text>`,
  )}</g>`;
}

/** One stacked bar: its x-axis label, its tooltip, and its segments bottom up. */
export interface Bar {
  label: string;
  title: string;
  segments: { value: number; cls: string }[];
}

/**
 * Stacked bars, one per slot, scaled to the largest stack (rounded up by {@link niceMax}).
 * Each segment is a `rect` with its class; each bar's tooltip is a `title`.
 */
export function barChart(frame: Frame, bars: readonly Bar[], format: (n: number) => string, name: string): Html {
  const top = niceMax(Math.max(0, ...bars.map((b) => b.segments.reduce((sum, s) => sum + s.value, 0))));
  const slot = (frame.width - pad.left - pad.right) / Math.max(1, bars.length);
  const gap = slot >= 4 ? Math.min(2, slot / 4) : 0;
  const xOf = (i: number) => r2(pad.left + i * slot);
  return html`<svg class="chart" viewBox="0 0 ${frame.width} ${frame.height}" width="${frame.width}" height="${frame.height}" role="img" aria-label="${name}">
${yAxis(frame, top, format)}
${bars.map((bar, i) => {
  let base = 0;
  return html`<g class="bar"><title>${bar.title}</title>${bar.segments
    .filter((s) => s.value > 0)
    .map((s) => {
      const y = yOf(frame, top, base + s.value);
      const h = r2(yOf(frame, top, base) - y);
      base += s.value;
      return html`<rect class="${s.cls}" x="${xOf(i)}" y="${y}" width="${r2(slot - gap)}" height="${h}"></rect>`;
    })}</g>`;
})}
${xAxis(
  frame,
  bars.map((b) => b.label),
  (i) => xOf(i),
)}
</svg>`;
}

/** One line: its class, its legend name, a value per slot (undefined: no point, a gap). */
export interface Series {
  name: string;
  cls: string;
  values: readonly (number | undefined)[];
}

/**
 * Lines over the same slots, scaled to `top` when given (a rate: 1), else to the largest
 * value (rounded up). A slot without a value breaks the line; a lone point is a dot.
 */
export function lineChart(
  frame: Frame,
  labels: readonly string[],
  series: readonly Series[],
  format: (n: number) => string,
  name: string,
  top?: number,
): Html {
  const scale = top ?? niceMax(Math.max(0, ...series.flatMap((s) => s.values.filter((v) => v !== undefined))));
  const step = (frame.width - pad.left - pad.right) / Math.max(1, labels.length - 1);
  const xOf = (i: number) => r2(pad.left + i * step);
  return html`<svg class="chart" viewBox="0 0 ${frame.width} ${frame.height}" width="${frame.width}" height="${frame.height}" role="img" aria-label="${name}">
${yAxis(frame, scale, format)}
${series.map((s) => html`<g class="line ${s.cls}"><title>${s.name}</title>${runsOf(s.values).map((run) => (run.length === 1 ? html`<circle cx="${xOf(run[0]!.i)}" cy="${yOf(frame, scale, run[0]!.v)}" r="2"></circle>` : html`<polyline points="${run.map((p) => `${xOf(p.i)},${yOf(frame, scale, p.v)}`).join(' ')}"></polyline>`))}</g>`)}
${xAxis(frame, labels, xOf)}
</svg>`;
}

/** The unbroken runs of defined values, each point with its slot. */
function runsOf(values: readonly (number | undefined)[]): { i: number; v: number }[][] {
  const runs: { i: number; v: number }[][] = [];
  let current: { i: number; v: number }[] = [];
  values.forEach((v, i) => {
    if (v === undefined || !Number.isFinite(v)) {
      if (current.length > 0) runs.push(current);
      current = [];
    } else current.push({ i, v });
  });
  if (current.length > 0) runs.push(current);
  return runs;
}

/** A legend: a swatch of each class and its name. */
export function legend(items: readonly { name: string; cls: string }[]): Html {
  return html`<p class="legend">${items.map((item) => html`<span><i class="swatch ${item.cls}"></i>${item.name}</span> `)}</p>`;
}
