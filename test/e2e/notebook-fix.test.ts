import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/** #23: a name defined twice shows marimo's one-click fixes on the cell; pressing one edits the cells and the notebook runs. */

const notebook = [
  '// %% [code] id=first001 name="first"',
  'const total = 10',
  '// %% [code] id=second01 name="second"',
  'const total = 20',
  '// %% [code] id=double01 name="double"',
  'total * 2',
  '',
].join('\n');

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({ files: { 'notebooks/twice.nb.ts': notebook } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const cell = (p: Page, id: string) => p.locator(`li.cell[data-cell="${id}"]`);

describe('one-click fix for a redefinition', () => {
  it('the error offers rename; pressing it renames the definition and its use below, and the notebook runs', async () => {
    const p = await open('#/notebook/twice.nb.ts');
    await cell(p, 'second01').waitFor();
    await p.getByRole('button', { name: 'Run all' }).click();
    await cell(p, 'second01').locator('.outputs', { hasText: 'also defined by cell "first"' }).waitFor();
    const fixes = cell(p, 'second01').getByRole('group', { name: 'Fixes for total' });
    await fixes.getByRole('button', { name: /^Rename/ }).waitFor();
    expect(await fixes.getByRole('button').allTextContents()).toEqual([
      "Rename this cell's total to total_2 (and its uses below)",
      'Merge into cell "first" (first001)',
      'Delete this cell',
    ]);
    // The first definition keeps the error but offers no fix.
    expect(await cell(p, 'first001').getByRole('group').count()).toBe(0);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-fix-offered.png'), fullPage: true });
    await fixes.getByRole('button', { name: /^Rename/ }).click();
    await cell(p, 'double01').locator('.outputs', { hasText: '40' }).waitFor();
    await expect.poll(() => cell(p, 'second01').locator('.cm-content').textContent()).toBe('const total_2 = 20');
    expect(await cell(p, 'double01').locator('.cm-content').textContent()).toBe('total_2 * 2');
    await expect
      .poll(() => p.locator('li.cell').evaluateAll((cells) => cells.map((c) => c.getAttribute('data-state'))))
      .toEqual(['success', 'success', 'success']);
    await expect.poll(() => cell(p, 'second01').getByRole('group', { name: 'Fixes for total' }).count()).toBe(0);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-fix-applied.png'), fullPage: true });
  });
});
