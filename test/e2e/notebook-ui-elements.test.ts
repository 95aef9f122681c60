import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/** Interactive elements (#23) in the notebook view: a slider drives a dependent cell, by keyboard, and keeps its value over a reload. */

const notebook = [
  '// %% [code] id=knob0001 name="knob"',
  'const n = ui.slider({ min: 1, max: 10, value: 3, label: "Bars" })',
  'n',
  '// %% [code] id=chart001 name="chart"',
  'const bars = "#".repeat(n.value)',
  'bars',
  '// %% [code] id=pick0001 name="pick"',
  'const kind = ui.dropdown({ options: ["tea", "cake"], label: "Kind" })',
  'kind',
  '// %% [code] id=show0001 name="show"',
  '`you picked ${kind.value}`',
  '',
].join('\n');

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({ files: { 'notebooks/knobs.nb.ts': notebook } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const cell = (p: Page, id: string) => p.locator(`li.cell[data-cell="${id}"]`);

describe('interactive elements in the notebook view', () => {
  it('moving a slider re-runs the cell that reads it; the value survives a reload', async () => {
    const p = await open('#/notebook/knobs.nb.ts');
    await cell(p, 'knob0001').waitFor();
    await p.getByRole('button', { name: 'Run all' }).click();
    await cell(p, 'chart001').locator('.outputs pre', { hasText: /^###$/ }).waitFor();
    const slider = p.getByRole('slider', { name: 'Bars' });
    await slider.focus();
    await p.keyboard.press('ArrowRight');
    await p.keyboard.press('ArrowRight');
    await cell(p, 'chart001')
      .locator('.outputs pre', { hasText: /^#####$/ })
      .waitFor();
    await p.getByRole('combobox', { name: 'Kind' }).selectOption('cake');
    await cell(p, 'show0001').locator('.outputs', { hasText: 'you picked cake' }).waitFor();
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-ui-elements.png'), fullPage: true });

    await p.reload();
    await cell(p, 'knob0001').waitFor();
    expect(await p.getByRole('slider', { name: 'Bars' }).inputValue()).toBe('5');
    expect(await cell(p, 'chart001').locator('.outputs pre').textContent()).toBe('#####');
  });
});
