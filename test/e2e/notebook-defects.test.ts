import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vegaLiteToSvg } from '../../core/notebook/render.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/** The notebook view defects of #29 (item 7), each in a real browser. */

const notebook = [
  '// %% [code] id=rate0001 name="rate"',
  'const rate = 2',
  '// %% [code] id=total001 name="total"',
  'const total = rate * 21',
  'total',
  '// %% [code] id=fails001 name="fails"',
  'throw new Error("nope")',
  '',
].join('\n');

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({ files: { 'notebooks/prices.nb.ts': notebook } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const cell = (p: Page, id: string) => p.locator(`li.cell[data-cell="${id}"]`);

/** WCAG contrast ratio of two `rgb(r, g, b)` colours. */
function contrast(a: string, b: string): number {
  const luminance = (css: string) => {
    const [r, g, bl] = (css.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((n) => {
      const c = Number(n) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

describe('notebook view defects (#29)', () => {
  it('a deep link without the .nb.ts suffix opens the notebook and shows its own link', async () => {
    const p = await open('#/notebook/prices');
    await cell(p, 'rate0001').waitFor();
    await p.waitForFunction(() => location.hash === '#/notebook/prices.nb.ts');
  });

  it('prints an error once, and shows the execution count after a run', async () => {
    const p = await open('#/notebook/prices.nb.ts');
    await cell(p, 'rate0001').waitFor();
    await p.getByRole('button', { name: 'Run all' }).click();
    const error = cell(p, 'fails001').locator('.out-error');
    await error.waitFor();
    expect(((await error.textContent()) ?? '').match(/Error: nope/g)).toHaveLength(1);
    await cell(p, 'total001').locator('.outputs', { hasText: '42' }).waitFor();
    const counts = await Promise.all(['rate0001', 'total001'].map((id) => cell(p, id).locator('.cell-bar .mono').textContent()));
    for (const count of counts) expect(count).toMatch(/^\[\d+\]$/);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-defects-run.png'), fullPage: true });
  });

  it("the tool panel's Open output is scrolled on screen", async () => {
    const p = await open('#/notebook/prices.nb.ts');
    await cell(p, 'rate0001').waitFor();
    await p.getByRole('button', { name: 'Run all' }).click();
    await cell(p, 'total001').locator('.outputs', { hasText: '42' }).waitFor();
    await p.getByRole('button', { name: 'Open Execution history' }).click();
    const output = p.getByTestId('tool-output');
    await output.locator('pre', { hasNotText: 'Loading…' }).waitFor();
    await p.waitForFunction(() => {
      const box = document.querySelector('[data-testid="tool-output"]')!.getBoundingClientRect();
      return box.top >= 0 && box.top < window.innerHeight - 20;
    });
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-tool-output.png') });
  });

  it('in dark mode the editor keeps variable names readable', async () => {
    const p = await open('#/notebook/prices.nb.ts');
    await cell(p, 'rate0001').waitFor();
    await p.getByRole('combobox', { name: 'Theme' }).selectOption('dark');
    await p.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
    const colours = await cell(p, 'rate0001')
      .locator('.cm-content')
      .evaluate((content) => {
        const background = getComputedStyle(content.closest('.cm-editor')!).backgroundColor;
        const spans = [...content.querySelectorAll('span')].filter((s) => s.textContent === 'rate');
        return { background, colours: spans.map((s) => getComputedStyle(s).color) };
      });
    expect(colours.colours.length).toBeGreaterThan(0);
    for (const colour of colours.colours) expect(contrast(colour, colours.background)).toBeGreaterThanOrEqual(4.5);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-dark-editor.png') });
  });

  it('chart axis labels do not overlap, with many long categories and large values', async () => {
    const values = Array.from({ length: 30 }, (_, i) => ({ region: `North-east region ${i}`, revenue: 1_250_000 + i * 37_000 }));
    const svg = vegaLiteToSvg({
      mark: 'bar',
      data: { values },
      encoding: { x: { field: 'region', type: 'nominal' }, y: { field: 'revenue' } },
    });
    const p = await open('#/status');
    await p.setContent(`<!doctype html><body style="margin:0">${svg}</body>`);
    const boxes = await p.evaluate(() =>
      [...document.querySelectorAll('svg text')].map((t) => {
        const r = t.getBoundingClientRect();
        return { text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
      }),
    );
    const overlaps: string[] = [];
    boxes.forEach((a, i) => {
      for (const b of boxes.slice(i + 1)) {
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps.push(`${a.text} × ${b.text}`);
      }
    });
    expect(overlaps).toEqual([]);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-chart-labels.png') });
  });
});
