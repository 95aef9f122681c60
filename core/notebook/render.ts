/**
 * Rich outputs: turning cell values into mime bundles (in the kernel worker) and mime bundles into
 * HTML (in the UI and the HTML export), so both show exactly the same thing.
 *
 * What renders as what:
 * - strings, numbers, booleans, bigints → `text/plain`
 * - arrays of plain records and data frames → `text/html` table + `application/json` rows. Data
 *   frames are duck-typed on arquero's `columnNames()`/`numRows()`/`objects()` so the kernel needs
 *   no dependency and any arquero version works.
 * - `html\`...\``, `svg\`...\`` helpers → `text/html` / `image/svg+xml`
 * - PNG bytes (Buffer/Uint8Array with the PNG signature) or `image(bytes)` → `image/png`
 * - Vega-Lite specs (`$schema` naming vega-lite, or `mark` + `encoding`) → `image/svg+xml`
 *   plus the spec itself as `application/vnd.vegalite.v5+json` so Jupyter renders it natively.
 * - other objects → `application/json` (when JSON-safe) + `text/plain` via `util.inspect`
 *
 * Charts: the vega/vega-lite packages pull in a large tree and a canvas shim for SVG, so instead
 * this file renders the common Vega-Lite subset itself (marks bar, line, point, area; x/y fields
 * of any type; a nominal `color`; inline `data.values`), to clean SVG with axes and a legend.
 * Specs outside the subset still get their JSON bundle and a note in `text/plain`.
 */
import { inspect } from 'node:util';
import type { Output } from './schemas.js';

export type MimeBundle = Record<string, unknown>;

const DISPLAY = Symbol.for('hangar.notebook.display');

/** A value that knows how it wants to be displayed. */
export interface Displayable {
  readonly [DISPLAY]: MimeBundle;
}

const displayable = (bundle: MimeBundle): Displayable => ({ [DISPLAY]: bundle });

const isDisplayable = (value: unknown): value is Displayable => typeof value === 'object' && value !== null && DISPLAY in value;

function template(strings: TemplateStringsArray | string, values: unknown[]): string {
  if (typeof strings === 'string') return strings;
  return strings.reduce((out, s, i) => out + s + (i < values.length ? String(values[i]) : ''), '');
}

/** Kernel helpers, available in every cell without import. */
export const helpers = {
  html: (strings: TemplateStringsArray | string, ...values: unknown[]) => displayable({ 'text/html': template(strings, values) }),
  svg: (strings: TemplateStringsArray | string, ...values: unknown[]) => displayable({ 'image/svg+xml': template(strings, values) }),
  md: (strings: TemplateStringsArray | string, ...values: unknown[]) => displayable({ 'text/markdown': template(strings, values) }),
  table: (rows: unknown, options: { limit?: number } = {}) =>
    displayable(tableBundle(rows, options.limit) ?? { 'text/plain': inspect(rows) }),
  chart: (spec: VegaLiteSpec) => displayable(chartBundle(spec)),
  image: (bytes: Uint8Array, mime = 'image/png') => displayable({ [mime]: Buffer.from(bytes).toString('base64') }),
};

export const MAX_TABLE_ROWS = 200;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

interface FrameLike {
  columnNames(): string[];
  numRows(): number;
  objects(options?: { limit?: number }): Array<Record<string, unknown>>;
}

const isFrame = (value: unknown): value is FrameLike =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as FrameLike).columnNames === 'function' &&
  typeof (value as FrameLike).numRows === 'function' &&
  typeof (value as FrameLike).objects === 'function';

const isPlainRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value) ?? String(value);
  return String(value);
}

function jsonSafe(value: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
  } catch {
    return undefined;
  }
}

/** Table bundle for an array of records or a data frame; undefined when the value is neither. */
export function tableBundle(value: unknown, limit = MAX_TABLE_ROWS): MimeBundle | undefined {
  let rows: Array<Record<string, unknown>>;
  let columns: string[];
  let total: number;
  if (isFrame(value)) {
    columns = value.columnNames();
    total = value.numRows();
    rows = value.objects({ limit });
  } else if (Array.isArray(value) && value.length > 0 && value.every(isPlainRecord)) {
    const seen = new Set<string>();
    for (const row of value) for (const key of Object.keys(row)) seen.add(key);
    columns = [...seen];
    total = value.length;
    rows = value.slice(0, limit);
  } else {
    return undefined;
  }
  const head = columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('');
  const body = rows
    .map(
      (row) =>
        `<tr>${columns
          .map((c) => {
            const v = row[c];
            return `<td${typeof v === 'number' ? ' class="num"' : ''}>${escapeHtml(cellText(v))}</td>`;
          })
          .join('')}</tr>`,
    )
    .join('\n');
  const note = total > rows.length ? `<caption>${rows.length} of ${total} rows</caption>` : `<caption>${total} rows</caption>`;
  const plain = [columns.join('\t'), ...rows.map((r) => columns.map((c) => cellText(r[c])).join('\t'))].join('\n');
  return {
    'text/html': `<table class="hangar-table">${note}<thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`,
    'application/json': jsonSafe(rows),
    'text/plain': total > rows.length ? `${plain}\n… ${total - rows.length} more rows` : plain,
  };
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

const isVegaLite = (value: unknown): value is VegaLiteSpec =>
  isPlainRecord(value) &&
  ((typeof value.$schema === 'string' && value.$schema.includes('vega-lite')) || ('mark' in value && 'encoding' in value));

/**
 * Deno's and tslab's display protocol: an object with a `Symbol.for('Jupyter.display')` method
 * answers its own MIME bundle (what `Deno.jupyter.html` and friends return, and what libraries
 * written for those kernels implement).
 */
export const JUPYTER_DISPLAY = Symbol.for('Jupyter.display');

export function jupyterBundle(value: unknown): MimeBundle | undefined {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  const method = (value as Record<symbol, unknown>)[JUPYTER_DISPLAY];
  if (typeof method !== 'function') return undefined;
  const bundle = method.call(value) as unknown;
  return bundle && typeof bundle === 'object' && !(bundle instanceof Promise) ? (bundle as MimeBundle) : undefined;
}

/**
 * The bundle for a cell's value; undefined means "no output" (the value was `undefined`).
 * Never throws: a value that cannot be shown any other way falls back to `util.inspect`.
 */
export function renderValue(value: unknown): MimeBundle | undefined {
  if (value === undefined) return undefined;
  try {
    if (isDisplayable(value)) return value[DISPLAY];
    const jupyter = jupyterBundle(value);
    if (jupyter) return jupyter;
    if (typeof value === 'string') return { 'text/plain': value };
    if (value instanceof Uint8Array && PNG_SIGNATURE.every((b, i) => value[i] === b)) {
      return { 'image/png': Buffer.from(value).toString('base64'), 'text/plain': `<PNG image, ${value.length} bytes>` };
    }
    const table = tableBundle(value);
    if (table) return table;
    if (isVegaLite(value)) return chartBundle(value);
    const plain = inspect(value, { depth: 4, maxArrayLength: 100, breakLength: 100 });
    if (typeof value === 'object' && value !== null && (Array.isArray(value) || isPlainRecord(value))) {
      const json = jsonSafe(value);
      if (json !== undefined) return { 'application/json': json, 'text/plain': plain };
    }
    return { 'text/plain': plain };
  } catch (err) {
    return { 'text/plain': `<value could not be displayed: ${(err as Error).message}>` };
  }
}

// ---- charts -----------------------------------------------------------------------------------

export interface VegaLiteSpec {
  $schema?: string;
  title?: string | { text: string };
  width?: number;
  height?: number;
  data?: { values?: Array<Record<string, unknown>> };
  mark?: string | { type: string };
  encoding?: Partial<Record<'x' | 'y' | 'color', { field?: string; type?: string; title?: string; aggregate?: string }>>;
  [key: string]: unknown;
}

const PALETTE = ['#4c78a8', '#f58518', '#e45756', '#72b7b2', '#54a24b', '#eeca3b', '#b279a2', '#ff9da6', '#9d755d', '#bab0ac'];

export function chartBundle(spec: VegaLiteSpec): MimeBundle {
  const bundle: MimeBundle = { 'application/vnd.vegalite.v5+json': jsonSafe(spec) };
  try {
    bundle['image/svg+xml'] = vegaLiteToSvg(spec);
    bundle['text/plain'] = `<chart: ${typeof spec.mark === 'string' ? spec.mark : spec.mark?.type}>`;
  } catch (err) {
    bundle['text/plain'] = `<chart not rendered: ${(err as Error).message}>`;
  }
  return bundle;
}

const fmt = (n: number) =>
  Math.abs(n) >= 1000 || Number.isInteger(n) ? n.toLocaleString('en-US', { maximumFractionDigits: 0 }) : n.toPrecision(3);

/**
 * "Nice" ticks: steps of 1, 2 or 5 × 10^k, about five of them. With `cover` the ticks extend to
 * enclose [min, max] (a y axis grows to its top tick); without, they stay inside (an x axis).
 */
export function niceTicks(min: number, max: number, count = 5, cover = true): number[] {
  if (min === max) return [min];
  const raw = (max - min) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw * (1 - 1e-9))!;
  const first = (cover ? Math.floor(min / step) : Math.ceil(min / step)) * step;
  const last = (cover ? Math.ceil(max / step) : Math.floor(max / step)) * step;
  const ticks: number[] = [];
  for (let i = 0; first + i * step <= last + step * 1e-9; i++) ticks.push(Number((first + i * step).toPrecision(12)));
  return ticks;
}

/**
 * Render the supported Vega-Lite subset to SVG. Quantitative and temporal x use a linear scale;
 * nominal/ordinal x use bands in first-seen order. `aggregate: "sum" | "mean" | "count"` on y
 * groups by x (and color).
 */
/** Width of an 11px sans-serif axis label, generously estimated (wide glyphs count fully). */
const labelWidth = (text: string) => text.length * 7;

export function vegaLiteToSvg(spec: VegaLiteSpec): string {
  const mark = typeof spec.mark === 'string' ? spec.mark : spec.mark?.type;
  if (!mark || !['bar', 'line', 'point', 'area', 'circle'].includes(mark)) throw new Error(`unsupported mark "${mark}"`);
  const values = spec.data?.values;
  if (!Array.isArray(values)) throw new Error('only inline data.values is supported');
  const x = spec.encoding?.x;
  const y = spec.encoding?.y;
  const color = spec.encoding?.color;
  if (!x?.field || !y) throw new Error('encoding.x.field and encoding.y are required');
  const width = spec.width ?? 480;
  const height = spec.height ?? 280;

  const xTemporal = x.type === 'temporal';
  const xBand = mark === 'bar' || x.type === 'nominal' || x.type === 'ordinal';
  const xValue = (row: Record<string, unknown>) => row[x.field!];
  const seriesOf = (row: Record<string, unknown>) => (color?.field ? String(row[color.field]) : '');

  // Aggregate when asked: one y per (x, series).
  type Point = { x: unknown; y: number; series: string };
  let points: Point[];
  if (y.aggregate) {
    const groups = new Map<string, { x: unknown; series: string; values: number[] }>();
    for (const row of values) {
      const key = `${String(xValue(row))}\u0000${seriesOf(row)}`;
      let group = groups.get(key);
      if (!group) groups.set(key, (group = { x: xValue(row), series: seriesOf(row), values: [] }));
      group.values.push(y.field ? Number(row[y.field]) : 1);
    }
    points = [...groups.values()].map((g) => ({
      x: g.x,
      series: g.series,
      y:
        y.aggregate === 'count'
          ? g.values.length
          : y.aggregate === 'mean'
            ? g.values.reduce((a, b) => a + b, 0) / g.values.length
            : g.values.reduce((a, b) => a + b, 0),
    }));
  } else {
    if (!y.field) throw new Error('encoding.y.field is required without an aggregate');
    points = values.map((row) => ({ x: xValue(row), y: Number(row[y.field!]), series: seriesOf(row) }));
  }
  points = points.filter((p) => Number.isFinite(p.y));

  const series = [...new Set(points.map((p) => p.series))];
  const colorOf = (s: string) => PALETTE[series.indexOf(s) % PALETTE.length];
  const yMin = Math.min(0, ...points.map((p) => p.y));
  const yMax = Math.max(0, ...points.map((p) => p.y));
  const yTicks = niceTicks(yMin, yMax === yMin ? yMin + 1 : yMax);
  const y0 = Math.min(yMin, yTicks[0]);
  const y1 = Math.max(yMax, yTicks[yTicks.length - 1]);
  // The left margin fits the longest y tick label beside the rotated y title, so they never overlap.
  const yLabelWidth = Math.max(...yTicks.map((t) => labelWidth(fmt(t))));
  const margin = { top: spec.title ? 32 : 12, right: color?.field ? 110 : 16, bottom: 44, left: Math.max(56, 22 + yLabelWidth + 8) };
  const innerW = width - margin.left - margin.right;
  // Band labels wider than their band are drawn vertically (Vega-Lite's labelAngle -90) below the
  // axis, shortened to what half the chart's height holds, with the bottom margin grown to hold them;
  // every k-th is kept when even vertical ones would touch.
  const domain = xBand ? [...new Set(points.map((p) => String(p.x)))] : [];
  const bandwidth = innerW / Math.max(domain.length, 1);
  const slanted = xBand && Math.max(0, ...domain.map((d) => labelWidth(d))) + 6 > bandwidth;
  const maxChars = slanted ? Math.max(4, Math.floor((height / 2 - 44) / 7)) : Number.POSITIVE_INFINITY;
  const shortLabel = (text: string) => (text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text);
  const widest = Math.max(0, ...domain.map((d) => labelWidth(shortLabel(d))));
  if (slanted) margin.bottom = widest + 44;
  const innerH = height - margin.top - margin.bottom;
  const sy = (v: number) => margin.top + innerH - ((v - y0) / (y1 - y0 || 1)) * innerH;

  let sx: (v: unknown) => number;
  const xLabels: Array<{ at: number; text: string }> = [];
  if (xBand) {
    sx = (v) => margin.left + domain.indexOf(String(v)) * bandwidth + bandwidth / 2;
    // Vertical labels need a line's height (16 px) between them; straight ones their own width.
    const every = Math.max(1, Math.ceil((slanted ? 16 : widest + 6) / Math.max(bandwidth, 1)));
    domain.forEach((d, i) => {
      if (i % every === 0) xLabels.push({ at: sx(d), text: shortLabel(d) });
    });
  } else {
    const num = (v: unknown) => (xTemporal ? new Date(v as string).getTime() : Number(v));
    const xs = points.map((p) => num(p.x));
    const x0 = Math.min(...xs);
    const x1 = Math.max(...xs);
    sx = (v) => margin.left + ((num(v) - x0) / (x1 - x0 || 1)) * innerW;
    for (const t of xTemporal ? [x0, (x0 + x1) / 2, x1] : niceTicks(x0, x1, 5, false)) {
      xLabels.push({
        at: sx(xTemporal ? new Date(t).toISOString() : t),
        text: xTemporal ? new Date(t).toISOString().slice(0, 10) : fmt(t),
      });
    }
  }

  const parts: string[] = [];
  const title = typeof spec.title === 'string' ? spec.title : spec.title?.text;
  if (title) parts.push(`<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeHtml(title)}</text>`);
  for (const t of yTicks) {
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + innerW}" y1="${sy(t).toFixed(1)}" y2="${sy(t).toFixed(1)}" stroke="#e5e5e5"/>`,
    );
    parts.push(`<text x="${margin.left - 6}" y="${(sy(t) + 4).toFixed(1)}" text-anchor="end" font-size="11">${fmt(t)}</text>`);
  }
  parts.push(`<line x1="${margin.left}" x2="${margin.left + innerW}" y1="${sy(y0).toFixed(1)}" y2="${sy(y0).toFixed(1)}" stroke="#888"/>`);
  for (const label of xLabels) {
    const y = margin.top + innerH + 16;
    parts.push(
      slanted
        ? `<text transform="translate(${(label.at + 4).toFixed(1)} ${y - 6}) rotate(-90)" text-anchor="end" font-size="11">${escapeHtml(label.text)}</text>`
        : `<text x="${label.at.toFixed(1)}" y="${y}" text-anchor="middle" font-size="11">${escapeHtml(label.text)}</text>`,
    );
  }
  parts.push(
    `<text x="${margin.left + innerW / 2}" y="${height - 6}" text-anchor="middle" font-size="12">${escapeHtml(x.title ?? x.field)}</text>`,
  );
  const yTitle = y.title ?? (y.aggregate ? `${y.aggregate}${y.field ? ` of ${y.field}` : ''}` : y.field!);
  parts.push(
    `<text transform="translate(14 ${margin.top + innerH / 2}) rotate(-90)" text-anchor="middle" font-size="12">${escapeHtml(yTitle)}</text>`,
  );

  if (mark === 'bar') {
    const barW = (bandwidth * 0.8) / Math.max(series.length, 1);
    for (const p of points) {
      const i = series.indexOf(p.series);
      const left = sx(p.x) - bandwidth * 0.4 + i * barW;
      const top = Math.min(sy(p.y), sy(0));
      parts.push(
        `<rect x="${left.toFixed(1)}" y="${top.toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.abs(sy(0) - sy(p.y)).toFixed(1)}" fill="${colorOf(p.series)}"><title>${escapeHtml(`${String(p.x)}: ${p.y}`)}</title></rect>`,
      );
    }
  } else {
    for (const s of series) {
      const own = points.filter((p) => p.series === s);
      if (!xBand) own.sort((a, b) => sx(a.x) - sx(b.x));
      const coords = own.map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`);
      if (mark === 'line') parts.push(`<polyline points="${coords.join(' ')}" fill="none" stroke="${colorOf(s)}" stroke-width="2"/>`);
      if (mark === 'area' && own.length > 0) {
        const base = `${sx(own[own.length - 1].x).toFixed(1)},${sy(0).toFixed(1)} ${sx(own[0].x).toFixed(1)},${sy(0).toFixed(1)}`;
        parts.push(`<polygon points="${coords.join(' ')} ${base}" fill="${colorOf(s)}" fill-opacity="0.6"/>`);
      }
      if (mark === 'point' || mark === 'circle') {
        for (const p of own)
          parts.push(
            `<circle cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="3.5" fill="${colorOf(s)}"><title>${escapeHtml(`${String(p.x)}: ${p.y}`)}</title></circle>`,
          );
      }
    }
  }
  if (color?.field) {
    series.forEach((s, i) => {
      const ly = margin.top + 8 + i * 18;
      parts.push(`<rect x="${width - margin.right + 12}" y="${ly - 9}" width="10" height="10" fill="${colorOf(s)}"/>`);
      parts.push(`<text x="${width - margin.right + 28}" y="${ly}" font-size="11">${escapeHtml(s)}</text>`);
    });
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif">${parts.join('')}</svg>`;
}

// ---- outputs → HTML (UI and export) -----------------------------------------------------------

/**
 * A collapsible JSON tree with `<details>` (no script needed, so it works in exports too). The top
 * two levels start open; long arrays and objects show their first 100 entries.
 */
export function jsonTreeHtml(value: unknown, depth = 0): string {
  if (value === null || typeof value !== 'object') {
    const kind = value === null ? 'null' : typeof value;
    return `<span class="json-${kind}">${escapeHtml(JSON.stringify(value) ?? String(value))}</span>`;
  }
  const isArray = Array.isArray(value);
  const entries = isArray ? (value as unknown[]).map((v, i) => [String(i), v] as const) : Object.entries(value);
  const shown = entries.slice(0, 100);
  const label = isArray ? `Array(${entries.length})` : `Object {${entries.length} ${entries.length === 1 ? 'key' : 'keys'}}`;
  if (entries.length === 0) return `<span class="json-empty">${isArray ? '[]' : '{}'}</span>`;
  const items = shown.map(([k, v]) => `<li><span class="json-key">${escapeHtml(k)}</span>: ${jsonTreeHtml(v, depth + 1)}</li>`).join('');
  const more = entries.length > shown.length ? `<li>… ${entries.length - shown.length} more</li>` : '';
  return `<details${depth < 2 ? ' open' : ''}><summary>${label}</summary><ul>${items}${more}</ul></details>`;
}

/** The richest representation first, as Jupyter front-ends choose. */
const PREFERENCE = ['text/html', 'image/svg+xml', 'image/png', 'image/jpeg', 'text/markdown', 'application/json', 'text/plain'];

export function bundleToHtml(data: MimeBundle, renderMarkdown: (md: string) => string = (md) => `<pre>${escapeHtml(md)}</pre>`): string {
  const mime = PREFERENCE.find((m) => m in data) ?? Object.keys(data)[0];
  if (!mime) return '';
  const value = data[mime];
  const text = typeof value === 'string' ? value : Array.isArray(value) ? value.join('') : JSON.stringify(value, null, 2);
  switch (mime) {
    case 'text/html':
    case 'image/svg+xml':
      return `<div class="output-html">${text}</div>`;
    case 'image/png':
    case 'image/jpeg':
      return `<img alt="" src="data:${mime};base64,${text.replace(/\s/g, '')}"/>`;
    case 'text/markdown':
      return `<div class="output-md">${renderMarkdown(text)}</div>`;
    case 'application/json':
      return `<div class="output-json">${jsonTreeHtml(value)}</div>`;
    default:
      return `<pre class="output-text">${escapeHtml(text)}</pre>`;
  }
}

export function outputToHtml(output: Output, renderMarkdown?: (md: string) => string): string {
  switch (output.output_type) {
    case 'stream':
      return `<pre class="output-stream ${output.name}">${escapeHtml(output.text)}</pre>`;
    case 'display_data':
    case 'execute_result':
      return bundleToHtml(output.data, renderMarkdown);
    case 'error':
      return `<pre class="output-error">${escapeHtml(output.traceback.join('\n'))}</pre>`;
    default: {
      const never: never = output;
      return never;
    }
  }
}

/** Plain-text rendering of an output, for the terminal (`hangar notebook run`). */
export function outputToText(output: Output): string {
  switch (output.output_type) {
    case 'stream':
      return output.text;
    case 'display_data':
    case 'execute_result': {
      // Markdown reads fine as text; other rich types are named, not dumped.
      for (const mime of ['text/plain', 'text/markdown']) {
        const text = output.data[mime];
        if (typeof text === 'string') return text;
      }
      const first = Object.keys(output.data)[0];
      return first ? `<${first}>` : '';
    }
    case 'error':
      return output.traceback.join('\n');
    default: {
      const never: never = output;
      return never;
    }
  }
}
