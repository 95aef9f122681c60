import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseNotebook } from '../../core/notebook/formats.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * Merge in the notebook view's "file changed on disk" dialog (#23): edits made here and on disk to
 * different cells are both kept; a cell edited on both sides is shown side by side for a pick.
 */

const file = (cells: Array<[string, string]>) =>
  `// @hangar-notebook {"name":"t","created_at":"2026-01-01T00:00:00.000Z","metadata":{}}\n\n` +
  cells.map(([id, source]) => `// %% [code] id=${id}\n${source}\n`).join('\n');
const start: Array<[string, string]> = [
  ['merge001', 'const a = 1'],
  ['merge002', 'const b = 1'],
  ['merge003', 'a + b'],
];

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({
    files: { 'notebooks/one.nb.ts': file(start), 'notebooks/two.nb.ts': file(start), 'notebooks/three.nb.ts': file(start) },
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const cell = (p: Page, id: string) => p.locator(`li.cell[data-cell="${id}"]`);
const sources = async (name: string) => {
  const target = path.join(server.root, 'notebooks', name);
  return parseNotebook(await readFile(target, 'utf8'), target).cells.map((c) => c.source);
};

/** Type into a cell and wait until the server has the edit, so the session has unsaved edits of its own. */
async function edit(p: Page, id: string, text: string) {
  const sent = p.waitForResponse((r) => r.url().endsWith(`/cells/${id}`) && r.request().method() === 'PATCH');
  await cell(p, id).locator('.cm-content').click();
  await p.keyboard.press('Control+a');
  await p.keyboard.type(text);
  expect((await sent).ok()).toBe(true);
}

/** Writes `name` on disk beside the page's unsaved edits, presses Save and answers the banner of the refused save. */
async function saveOverDisk(p: Page, name: string, onDisk: Array<[string, string]>) {
  await server.write(`notebooks/${name}`, file(onDisk));
  await p.getByRole('button', { name: 'Save', exact: true }).click();
  const banner = p.getByRole('alertdialog');
  await banner.waitFor();
  return banner;
}

/** Presses Merge on a banner whose merge has cells edited on both sides, and answers the first one to pick. */
async function mergeChoice(banner: Locator) {
  await banner.getByRole('button', { name: 'Merge', exact: true }).click();
  const choice = banner.locator('fieldset.merge-conflict');
  await choice.waitFor();
  return choice;
}

/** Sends the picks and waits for the merged save. */
async function mergeWithChoices(p: Page, banner: Locator) {
  await banner.getByRole('button', { name: 'Merge with these choices' }).click();
  await p.getByRole('status').filter({ hasText: 'Merged with the file on disk and saved' }).waitFor();
}

describe('merging with the file on disk', () => {
  it('Merge keeps the edit made here and the one made on disk to another cell', async () => {
    const p = await open('#/notebook/one.nb.ts');
    await edit(p, 'merge002', 'const b = 20');
    const banner = await saveOverDisk(p, 'one.nb.ts', [['merge001', 'const a = 10'], start[1]!, start[2]!]);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-merge-dialog.png'), fullPage: true });
    await banner.getByRole('button', { name: 'Merge', exact: true }).click();
    await p.getByRole('status').filter({ hasText: 'Merged with the file on disk and saved (1 cell(s) from disk)' }).waitFor();
    await banner.waitFor({ state: 'detached' });
    await cell(p, 'merge001').locator('.cm-content', { hasText: 'const a = 10' }).waitFor();
    await cell(p, 'merge002').locator('.cm-content', { hasText: 'const b = 20' }).waitFor();
    expect(await sources('one.nb.ts')).toEqual(['const a = 10', 'const b = 20', 'a + b']);
    await p.getByRole('button', { name: 'Run all' }).click();
    await cell(p, 'merge003').locator('.outputs', { hasText: '30' }).waitFor();
  });

  it('a cell edited on both sides is shown side by side, and the pick is what gets saved', async () => {
    const p = await open('#/notebook/two.nb.ts');
    await edit(p, 'merge001', 'const a = 2');
    await edit(p, 'merge002', 'const b = 5');
    const banner = await saveOverDisk(p, 'two.nb.ts', [['merge001', 'const a = 3'], start[1]!, start[2]!]);
    const choice = await mergeChoice(banner);
    expect(await choice.locator('legend').textContent()).toBe('cell 1');
    expect(await choice.locator('.merge-side').allTextContents()).toEqual(['Yoursconst a = 2', 'On diskconst a = 3']);
    const go = banner.getByRole('button', { name: /^Merge/ });
    expect(await go.textContent()).toContain('1 left to pick');
    expect(await go.isDisabled()).toBe(true);
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-merge-conflict.png'), fullPage: true });
    // Nothing is written while a conflict is open.
    expect(await sources('two.nb.ts')).toEqual(['const a = 3', 'const b = 1', 'a + b']);
    await choice.getByLabel("Take the disk's").check();
    await mergeWithChoices(p, banner);
    expect(await sources('two.nb.ts')).toEqual(['const a = 3', 'const b = 5', 'a + b']);
    await cell(p, 'merge001').locator('.cm-content', { hasText: 'const a = 3' }).waitFor();
  });

  it('keeps the cells to pick when the file changes on disk again while they are shown', async () => {
    const p = await open('#/notebook/three.nb.ts');
    await edit(p, 'merge001', 'const a = 2');
    const banner = await saveOverDisk(p, 'three.nb.ts', [['merge001', 'const a = 3'], start[1]!, start[2]!]);
    const choice = await mergeChoice(banner);
    await choice.getByLabel("Take the disk's").check();
    // Another editor saves again while the choice is open: the server's watcher tells the page.
    await server.write('notebooks/three.nb.ts', file([['merge001', 'const a = 3'], ['merge002', 'const b = 7'], start[2]!]));
    await banner.locator('pre.diff', { hasText: 'const b = 7' }).waitFor();
    expect(await choice.count()).toBe(1);
    expect(await choice.getByLabel("Take the disk's").isChecked()).toBe(true);
    await mergeWithChoices(p, banner);
    expect(await sources('three.nb.ts')).toEqual(['const a = 3', 'const b = 7', 'a + b']);
  });
});
