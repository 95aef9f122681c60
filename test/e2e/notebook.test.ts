import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/** The notebook view in a real browser: reactive runs, stale marks, rich outputs, dependencies. */

const notebook = [
  '// %% [markdown] id=intro001 name="intro"',
  '// # Prices',
  '// %% [code] id=rate0001 name="rate"',
  'const rate = 2',
  '// %% [code] id=total001 name="total"',
  'const total = rate * 21',
  'total',
  '// %% [code] id=table001 name="table"',
  '[{ item: "tea", price: rate }, { item: "cake", price: total }]',
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

describe('notebook view', () => {
  it('lists the workspace notebooks in the view and the sidebar', async () => {
    const p = await open('#/notebook');
    await p.getByRole('link', { name: 'prices' }).first().waitFor();
    await p.locator('[data-kind="notebook"] a').first().waitFor();
    expect(await p.locator('[data-kind="notebook"] a').allTextContents()).toEqual(['prices']);
  });

  it('runs cells, and a change re-runs the cells that depend on it', async () => {
    const p = await open('#/notebook/prices.nb.ts');
    await cell(p, 'rate0001').waitFor();
    expect(await p.locator('li.cell.markdown h1').textContent()).toBe('Prices');

    await p.getByRole('button', { name: 'Run all' }).click();
    await cell(p, 'total001').locator('.outputs', { hasText: '42' }).waitFor();
    // The list of records is shown as a table.
    const table = cell(p, 'table001').locator('.outputs table');
    await table.waitFor();
    expect(await table.locator('tbody tr').count()).toBe(2);
    expect(await table.textContent()).toContain('cake');
    expect(await cell(p, 'total001').getAttribute('data-state')).toBe('success');

    // The dependency view knows total reads rate.
    await p.getByTestId('dependencies').getByText('rate').first().waitFor();
    expect(await p.getByTestId('dependencies').textContent()).toMatch(/rate\s*→\s*total/);

    // Edit rate: its dependents are marked stale before anything runs…
    const editor = cell(p, 'rate0001').locator('.cm-content');
    await editor.click();
    await p.keyboard.press('Control+a');
    await p.keyboard.type('const rate = 3');
    await p.locator('li.cell[data-cell="total001"][data-state="stale"]').waitFor({ timeout: 5000 });
    expect(await cell(p, 'total001').locator('.cell-state').textContent()).toBe('stale');
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-stale.png'), fullPage: true });

    // …and running it (Shift+Enter in the editor) re-runs total and the table with the new value.
    await p.keyboard.press('Shift+Enter');
    await cell(p, 'total001').locator('.outputs', { hasText: '63' }).waitFor({ timeout: 10_000 });
    await p.locator('li.cell[data-cell="total001"][data-state="success"]').waitFor();
    await cell(p, 'table001').locator('.outputs td', { hasText: '63' }).waitFor();
    await p.screenshot({ path: path.join(OUTPUT, 'notebook.png'), fullPage: true });

    // The edit reached the server's copy of the notebook.
    const saved = await server.request('/api/notebooks/prices.nb.ts/cells/rate0001');
    expect(saved.body.source).toBe('const rate = 3');
  });

  it('previews the notebook as an app in its layouts', async () => {
    const p = await open('#/notebook/prices.nb.ts');
    await p.getByRole('button', { name: 'Run all' }).click();
    await cell(p, 'table001').locator('.outputs table').waitFor({ timeout: 10_000 });
    await p.getByRole('button', { name: 'App preview' }).click();
    const app = p.getByTestId('app-preview');
    // Code is hidden; prose and outputs remain.
    await app.locator('h1', { hasText: 'Prices' }).waitFor();
    expect(await app.locator('.cm-content').count()).toBe(0);
    expect(await app.locator('table').count()).toBe(1);

    await p.getByLabel('Layout').selectOption('tabs');
    const tabs = app.getByRole('tab');
    // Titled by cell name (the markdown cell is named "intro").
    expect(await tabs.allTextContents()).toEqual(['intro', 'total', 'table']);
    await tabs.first().focus();
    await p.keyboard.press('ArrowRight');
    await p.keyboard.press('ArrowRight');
    expect(await app.getByRole('tab', { selected: true }).textContent()).toBe('table');
    await app.getByRole('tabpanel').locator('table').waitFor();
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-app.png') });

    await p.getByLabel('Layout').selectOption('sidebar');
    await app.locator('aside h1', { hasText: 'Prices' }).waitFor();
  });

  it('keeps outputs that arrived while an older copy of the notebook was on its way', async () => {
    const p = await open('#/notebook/prices.nb.ts');
    await cell(p, 'rate0001').waitFor();
    const created = await server.request('/api/notebooks/prices.nb.ts/cells', { method: 'POST', json: { source: '"fresh" + 1' } });
    const added = cell(p, created.body.id as string);
    await added.waitFor();

    // Hold the next copy of the notebook the page asks for, answered by the server before the run.
    let fetched!: () => void;
    let release!: () => void;
    const wasFetched = new Promise<void>((resolve) => (fetched = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    await p.route(`${server.url}/api/notebooks/prices.nb.ts`, async (route) => {
      if (route.request().method() !== 'GET') return route.continue();
      const response = await route.fetch();
      fetched();
      await released;
      await route.fulfill({ response });
    });
    // A change made elsewhere makes the page reload; its answer (named "fresh", no outputs) waits.
    await server.request(`/api/notebooks/prices.nb.ts/cells/${created.body.id}`, { method: 'PATCH', json: { name: 'fresh' } });
    await wasFetched;

    await added.getByRole('button', { name: /^Run / }).click();
    await added.locator('.outputs', { hasText: 'fresh1' }).waitFor({ timeout: 10_000 });
    release();
    // The held copy is shown (the name came with it), and the newer output stays.
    await p.waitForFunction(
      (id) => document.querySelector<HTMLInputElement>(`li.cell[data-cell="${id}"] input.cell-name`)?.value === 'fresh',
      created.body.id,
    );
    expect(await added.locator('.outputs').textContent()).toContain('fresh1');
    expect(await added.getAttribute('data-state')).toBe('success');
    await p.unroute(`${server.url}/api/notebooks/prices.nb.ts`);
    await server.request(`/api/notebooks/prices.nb.ts/cells/${created.body.id}`, { method: 'DELETE' });
  });

  it('shows an error output when a cell throws', async () => {
    const p = await open('#/notebook/prices.nb.ts');
    await cell(p, 'rate0001').waitFor();
    const before = await p.locator('li.cell').count();
    await p.getByRole('button', { name: '+ Code' }).click();
    await p.waitForFunction((n) => document.querySelectorAll('li.cell').length === n + 1, before);
    const added = p.locator('li.cell').last();
    await added.locator('.cm-content').click();
    await p.keyboard.type('throw new Error("boom")');
    await added.getByRole('button', { name: /^Run / }).click();
    await added.locator('.out-error', { hasText: 'boom' }).waitFor({ timeout: 10_000 });
    expect(await added.getAttribute('data-state')).toBe('error');
  });
});
