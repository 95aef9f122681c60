import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * The notebook's tools panel in a real browser: smart preprocessing suggestions for a variable
 * (one inserted as a new cell), algorithm-match recommendations, and the 13 tools.
 */

const notebook = [
  '// %% [code] id=sales001 name="sales"',
  '// Every seventh row lost its units; big follows units, so units predict it.',
  'const sales = Array.from({ length: 80 }, (_, i) => ({',
  '  units: i % 7 === 0 ? null : i,',
  '  price: 2 + (i % 5),',
  '  region: i % 2 ? "north" : "south",',
  '  big: i >= 40 ? "yes" : "no",',
  '}))',
  '',
].join('\n');

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({ files: { 'notebooks/sales.nb.ts': notebook } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe('notebook tools panel', () => {
  it("says what the server says when the variable's cell has not run", async () => {
    const p = await open('#/notebook/sales.nb.ts');
    const panel = p.getByTestId('tools-panel');
    // The variable list comes from what the cells define.
    await panel.getByLabel('Variable').locator('option', { hasText: 'sales' }).waitFor({ state: 'attached' });
    await panel.getByRole('button', { name: 'Suggest preparation' }).click();
    const alert = panel.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/^404: variable "sales" is not defined in notebook sales\.nb\.ts/);
  });

  it('shows smart preprocessing suggestions and inserts one as a new cell', async () => {
    const p = await open('#/notebook/sales.nb.ts');
    await p.getByRole('button', { name: 'Run all' }).click();
    await p.locator('li.cell[data-cell="sales001"][data-state="success"]').waitFor({ timeout: 10_000 });
    const panel = p.getByTestId('tools-panel');
    await panel.getByLabel('Variable').selectOption('sales');
    await panel.getByRole('button', { name: 'Suggest preparation' }).click();
    const prep = panel.getByTestId('smartprep');
    await prep.waitFor({ timeout: 15_000 });

    // What is shown is what the route answers.
    const expected = (await server.request('/api/smartprep/sales?notebook=sales.nb.ts')).body as {
      rows: number;
      columns: number;
      suggestions: { title: string; code: string; fixed_as: string }[];
    };
    expect(expected.rows).toBe(80);
    expect(await prep.locator('p.muted').first().textContent()).toContain('80 rows × 4 columns');
    expect(await prep.locator('li.suggestion strong').allTextContents()).toEqual(expected.suggestions.map((s) => s.title));
    const missing = expected.suggestions.find((s) => /missing/i.test(s.title));
    expect(missing, 'the null units are reported').toBeDefined();
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-tools.png'), fullPage: true });

    const before = await p.locator('li.cell').count();
    await prep.getByRole('button', { name: `Insert "${missing!.title}" as a cell` }).click();
    await panel.getByRole('status').filter({ hasText: 'Inserted cell' }).waitFor();
    await p.waitForFunction((n) => document.querySelectorAll('li.cell').length === n + 1, before);
    const added = p.locator('li.cell').last();
    expect(await added.locator('input.cell-name').inputValue()).toBe(missing!.fixed_as);
    // The server's copy has the suggestion's code as the new cell.
    const cells = (await server.request('/api/notebooks/sales.nb.ts/cells')).body.cells as { name: string; source: string }[];
    expect(cells.at(-1)).toMatchObject({ name: missing!.fixed_as, source: missing!.code });

    // The inserted cell runs and defines the fixed variable.
    await added.getByRole('button', { name: /^Run / }).click();
    await p.waitForFunction(() => document.querySelector('li.cell:last-child')?.getAttribute('data-state') === 'success', undefined, {
      timeout: 10_000,
    });
    await panel.getByLabel('Variable').locator('option', { hasText: missing!.fixed_as }).waitFor({ state: 'attached' });
  });

  it('recommends algorithms for a target', async () => {
    const p = await open('#/notebook/sales.nb.ts');
    await p.getByRole('button', { name: 'Run all' }).click();
    await p.locator('li.cell[data-cell="sales001"][data-state="success"]').waitFor({ timeout: 10_000 });
    const panel = p.getByTestId('tools-panel');
    await panel.getByLabel('Variable').selectOption('sales');
    await panel.getByLabel('Target').fill('big');
    await panel.getByRole('button', { name: 'Match algorithms' }).click();
    const match = panel.getByTestId('algorithm-match');
    await match.waitFor({ timeout: 20_000 });
    expect(await match.locator('p.muted').first().textContent()).toMatch(/^classification · 80 samples · \d+ features · score: accuracy/);
    const names = await match.locator('li.suggestion').evaluateAll((items) => items.map((li) => li.getAttribute('data-algorithm')));
    expect(names.length).toBeGreaterThan(0);
    // The best is first, with its score as the server computed it (3 decimals).
    const scores = (await match.locator('li.suggestion .mono').allTextContents()).map(Number);
    expect(scores.every((s) => s >= 0 && s <= 1)).toBe(true);
    expect(await match.getByRole('button', { name: `Insert ${names[0]} as a cell` }).isEnabled()).toBe(true);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-algorithms.png'), fullPage: true });

    // An unknown target is refused with the server's detail.
    await panel.getByLabel('Target').fill('nope');
    await panel.getByRole('button', { name: 'Match algorithms' }).click();
    const alert = panel.getByRole('alert');
    await alert.waitFor({ timeout: 15_000 });
    expect(await alert.textContent()).toMatch(/^422: .*nope/);
  });

  it('lists the 13 tools and opens a read-only one', async () => {
    const p = await open('#/notebook/sales.nb.ts');
    const list = p.getByTestId('tool-list');
    await list.waitFor();
    expect(await list.locator('li').count()).toBe(13);
    expect(await list.locator('.tool-name').allTextContents()).toContain('12. Cell dependencies');
    await list.getByRole('button', { name: 'Open Code analyzer' }).click();
    const output = p.getByTestId('tool-output');
    await output.locator('pre', { hasText: 'sales' }).waitFor();
    expect(await output.locator('h4').textContent()).toContain('/api/notebooks/sales.nb.ts/tools/analyze');
    const answer = (await server.request('/api/notebooks/sales.nb.ts/tools/analyze')).body;
    expect(JSON.parse((await output.locator('pre').textContent())!)).toEqual(answer);
  });
});
