import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAYOUTS } from '../../core/notebook/export.js';
import { startAppServer } from '../../core/notebook/server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { type Browser, launchBrowser, OUTPUT } from './browser.js';

/**
 * #23: `notebook app` is an interactive app in all five layouts. The report runs in a sandboxed
 * frame (no allow-same-origin), so its controls reach the kernel through the page around it by
 * messages; moving a slider there re-runs the chart that reads it. The editor's app preview keeps
 * its controls live too.
 */

const notebook = [
  '// %% [code] id=knob0001 name="knob"',
  'const n = ui.slider({ min: 1, max: 10, value: 3, label: "Bars" })',
  'n',
  '// %% [code] id=chart001 name="chart"',
  'chart({ mark: "bar", data: { values: Array.from({ length: n.value }, (_, i) => ({ x: `b${i}`, y: i + 1 })) },',
  '  encoding: { x: { field: "x", type: "ordinal" }, y: { field: "y", type: "quantitative" } } })',
  '// %% [code] id=label001 name="label"',
  '`${n.value} bars`',
  '',
].join('\n');

let browser: Browser;
let dir: string;
let file: string;

beforeAll(async () => {
  browser = await launchBrowser();
  dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-nb-app-'));
  file = path.join(dir, 'bars.nb.ts');
  await writeFile(file, notebook);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await rm(dir, { recursive: true, force: true });
});

async function openPage(url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) problems.push(msg.text());
  });
  await page.goto(url);
  return { page, problems };
}

async function reportFrame(page: Page): Promise<Frame> {
  const element = await page.waitForSelector('iframe[src="report"]', { state: 'attached' });
  const frame = await element.contentFrame();
  if (!frame) throw new Error('no report frame');
  return frame;
}

/** Bars of the chart cell's SVG (each bar carries a <title>). */
const barsIn = (frame: Frame) => frame.locator('[data-cell-outputs="chart001"] svg rect:has(title)').count();

/** The chart cell is on another tab in the tabs layout; show it first. */
async function showChart(frame: Frame, layout: string): Promise<void> {
  if (layout === 'tabs') await frame.getByRole('tab', { name: 'chart' }).click();
}

describe('notebook app: interactive elements through the sandboxed frame', () => {
  for (const layout of LAYOUTS) {
    it(`moving the slider re-draws the dependent chart (${layout} layout)`, async () => {
      const app = await startAppServer({ file, port: 0, layout });
      try {
        const { page, problems } = await openPage(app.url);
        expect(await page.getAttribute('iframe[src="report"]', 'sandbox')).toBe('allow-scripts');
        const frame = await reportFrame(page);
        const slider = frame.getByRole('slider', { name: 'Bars' });
        await slider.waitFor();
        // Values persist per session: an earlier layout's test may have left it elsewhere.
        const start = Number(await slider.inputValue());
        await showChart(frame, layout);
        expect(await barsIn(frame)).toBe(start);
        if (layout === 'tabs') await frame.getByRole('tab', { name: 'knob' }).click();
        await slider.focus();
        await page.keyboard.press('ArrowRight');
        await page.keyboard.press('ArrowRight');
        await showChart(frame, layout);
        await expect.poll(() => barsIn(frame)).toBe(start + 2);
        if (layout === 'linear') {
          await frame.locator('[data-cell-outputs="label001"]', { hasText: `${start + 2} bars` }).waitFor();
          await page.screenshot({ path: path.join(OUTPUT, 'notebook-app-slider.png'), fullPage: true });
        }
        // The value is the session's: a reload of the page shows it, and the chart drawn for it.
        await page.reload();
        const again = await reportFrame(page);
        if (layout === 'tabs') await again.getByRole('tab', { name: 'knob' }).click();
        expect(await again.getByRole('slider', { name: 'Bars' }).inputValue()).toBe(String(start + 2));
        await showChart(again, layout);
        expect(await barsIn(again)).toBe(start + 2);
        expect(problems).toEqual([]);
        await page.close();
      } finally {
        await app.close();
      }
    });
  }

  it('the page ignores messages from other windows and of other shapes', async () => {
    const app = await startAppServer({ file, port: 0, layout: 'linear' });
    try {
      const { page, problems } = await openPage(app.url);
      const frame = await reportFrame(page);
      await frame.getByRole('slider', { name: 'Bars' }).waitFor();
      const posted: string[] = [];
      page.on('request', (req) => {
        if (req.url().includes('/ui/')) posted.push(req.url());
      });
      // The page itself (not the frame) sends a well-formed message; the frame sends bad ids and shapes.
      await page.evaluate(() => window.postMessage({ type: 'hangar-ui-set', id: 'knob0001:0', value: 9 }, '*'));
      await frame.evaluate(() => {
        parent.postMessage({ type: 'hangar-ui-set', id: '../../rerun', value: 9 }, '*');
        parent.postMessage({ type: 'hangar-ui-set', id: 'knob0001:0' }, '*');
        parent.postMessage('hangar-ui-set knob0001:0 9', '*');
      });
      // One good message afterwards proves the page was listening, and is the only request.
      await frame.evaluate(() => parent.postMessage({ type: 'hangar-ui-set', id: 'knob0001:0', value: 1 }, '*'));
      await expect.poll(() => barsIn(frame)).toBe(1);
      expect(posted).toEqual([`${app.url}/ui/knob0001%3A0`]);
      // Nor does the frame take outputs from anything but its parent.
      await frame.evaluate(() =>
        window.postMessage({ type: 'hangar-app-outputs', cells: [{ id: 'label001', html: '<p>forged</p>' }] }, '*'),
      );
      await frame.locator('[data-cell-outputs="label001"]', { hasText: '1 bars' }).waitFor();
      expect(await frame.locator('[data-cell-outputs="label001"]').textContent()).not.toContain('forged');
      expect(problems).toEqual([]);
      await page.close();
    } finally {
      await app.close();
    }
  });
});

describe("the editor's app preview", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files: { 'notebooks/bars.nb.ts': notebook } });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('keeps its controls live: the slider re-draws the chart', async () => {
    const { page, problems } = await openPage(`${server.url}/ui/#/notebook/bars.nb.ts`);
    await page.getByRole('button', { name: 'Run all' }).click();
    await page.locator('li.cell[data-cell="label001"] .outputs', { hasText: '3 bars' }).waitFor();
    await page.getByRole('button', { name: 'App preview' }).click();
    const chart = page.locator('[data-testid="app-preview"] [data-cell="chart001"] img');
    const before = await chart.getAttribute('src');
    const slider = page.getByRole('slider', { name: 'Bars' });
    await slider.focus();
    await page.keyboard.press('ArrowRight');
    await page.locator('[data-testid="app-preview"] [data-cell="label001"]', { hasText: '4 bars' }).waitFor();
    await expect.poll(() => chart.getAttribute('src')).not.toBe(before);
    const svg = decodeURIComponent((await chart.getAttribute('src'))!.replace(/^data:image\/svg\+xml[^,]*,/, ''));
    expect(svg.match(/<title>b\d+: /g)).toHaveLength(4);
    expect(problems).toEqual([]);
    await page.close();
  });
});
