import * as aq from 'arquero';
import { describe, expect, it } from 'vitest';
import {
  bundleToHtml,
  chartBundle,
  helpers,
  niceTicks,
  outputToText,
  renderValue,
  tableBundle,
  vegaLiteToSvg,
} from '../../core/notebook/render.js';

describe('rich outputs', () => {
  it('renders scalars as text and nothing for undefined', () => {
    expect(renderValue(undefined)).toBeUndefined();
    expect(renderValue('hi')).toEqual({ 'text/plain': 'hi' });
    expect(renderValue(42n)).toEqual({ 'text/plain': '42n' });
  });

  it('renders plain objects as a JSON tree plus text', () => {
    const bundle = renderValue({ a: 1, nested: { b: [1, 2] } })!;
    expect(bundle['application/json']).toEqual({ a: 1, nested: { b: [1, 2] } });
    expect(bundle['text/plain']).toContain('nested');
  });

  it('renders arrays of records as an escaped HTML table, capped with a note', () => {
    const rows = Array.from({ length: 250 }, (_, i) => ({ i, label: i === 0 ? '<b>x</b>' : `r${i}` }));
    const bundle = tableBundle(rows)!;
    const html = bundle['text/html'] as string;
    expect(html).toContain('<caption>200 of 250 rows</caption>');
    expect(html).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(html.match(/<tr>/g)).toHaveLength(201); // header + 200 rows
    expect(renderValue([1, 2, 3])!['text/html']).toBeUndefined(); // not records: no table
  });

  it('renders an arquero table as a table', () => {
    const table = aq.table({ city: ['Oslo', 'Lima'], temp: [3, 19] });
    const html = renderValue(table)!['text/html'] as string;
    expect(html).toContain('<th>city</th><th>temp</th>');
    expect(html).toContain('<td class="num">19</td>');
  });

  it('renders PNG bytes as an image and the html/svg helpers as themselves', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    expect(renderValue(png)!['image/png']).toBe(png.toString('base64'));
    expect(renderValue(helpers.html`<i>${1 + 1}</i>`)).toEqual({ 'text/html': '<i>2</i>' });
    expect(renderValue(helpers.svg`<svg></svg>`)).toEqual({ 'image/svg+xml': '<svg></svg>' });
  });

  it('renders a Vega-Lite spec to SVG and keeps the spec for Jupyter', () => {
    const spec = {
      $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
      title: 'Sales',
      mark: 'bar',
      data: {
        values: [
          { k: 'a', v: 3 },
          { k: 'b', v: 7 },
          { k: 'a', v: 2 },
        ],
      },
      encoding: { x: { field: 'k', type: 'nominal' }, y: { field: 'v', type: 'quantitative', aggregate: 'sum' } },
    };
    const bundle = renderValue(spec)!;
    const svg = bundle['image/svg+xml'] as string;
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg.match(/<rect /g)).toHaveLength(2); // a (3 + 2) and b (7)
    expect(svg).toContain('<title>a: 5</title>');
    expect(svg).toContain('>Sales<');
    expect(bundle['application/vnd.vegalite.v5+json']).toEqual(spec);
    const line = vegaLiteToSvg({
      mark: 'line',
      data: {
        values: [
          { x: 1, y: 1, s: 'p' },
          { x: 2, y: 4, s: 'q' },
        ],
      },
      encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y' }, color: { field: 's', type: 'nominal' } },
    });
    expect(line.match(/<polyline /g)).toHaveLength(2);
  });

  it('explains an unsupported chart instead of failing', () => {
    const bundle = chartBundle({ mark: 'geoshape', encoding: {}, data: { values: [] } });
    expect(bundle['image/svg+xml']).toBeUndefined();
    expect(bundle['text/plain']).toMatch(/not rendered: unsupported mark "geoshape"/);
  });

  it('picks nice ticks', () => {
    expect(niceTicks(0, 97)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('renders JSON as a collapsible tree', () => {
    const html = bundleToHtml({ 'application/json': { a: [1, 'x<'], b: null, c: {} } });
    expect(html).toContain('<details open><summary>Object {3 keys}</summary>');
    expect(html).toContain('<summary>Array(2)</summary>');
    expect(html).toContain('<span class="json-string">&quot;x&lt;&quot;</span>');
    expect(html).toContain('<span class="json-null">null</span>');
    expect(html).toContain('<span class="json-empty">{}</span>');
  });

  it('turns outputs into HTML and terminal text', () => {
    expect(bundleToHtml({ 'text/plain': '<x>', 'text/html': '<b>y</b>' })).toBe('<div class="output-html"><b>y</b></div>');
    expect(bundleToHtml({ 'text/plain': '<x>' })).toBe('<pre class="output-text">&lt;x&gt;</pre>');
    expect(outputToText({ output_type: 'display_data', data: { 'text/markdown': '**5** rows' }, metadata: {} })).toBe('**5** rows');
    expect(outputToText({ output_type: 'display_data', data: { 'image/png': 'AAAA' }, metadata: {} })).toBe('<image/png>');
    expect(outputToText({ output_type: 'error', ename: 'E', evalue: 'v', traceback: ['E: v', '  at cell'] })).toBe('E: v\n  at cell');
  });
});
