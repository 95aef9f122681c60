import { copyFile, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * The notebook view and its file (#23): saved outputs shown as stale until re-run, a save over a
 * newer disk version refused with the diff and a reload / overwrite choice, disk edits followed live.
 */

const file = (cells: Array<[string, string]>) =>
  `// @hangar-notebook {"name":"t","created_at":"2026-01-01T00:00:00.000Z","metadata":{}}\n\n` +
  cells.map(([id, source]) => `// %% [code] id=${id}\n${source}\n`).join('\n');

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({
    files: {
      'notebooks/clash.nb.ts': file([['clash001', 'const a = 1']]),
      'notebooks/typing.nb.ts': file([['typing01', 'const b = 1']]),
      'notebooks/live.nb.ts': file([
        ['live0001', 'const x = 2'],
        ['live0002', 'x * 10'],
      ]),
    },
  });
  await copyFile(path.resolve('test/fixtures/notebooks/deno-basics.ipynb'), path.join(server.root, 'notebooks', 'deno.ipynb'));
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const cell = (p: Page, id: string) => p.locator(`li.cell[data-cell="${id}"]`);

describe('notebook files', () => {
  it('shows outputs saved in the file as stale until the cell runs', async () => {
    const p = await open('#/notebook/deno.ipynb');
    const total = cell(p, 'e5f6a7b8');
    await total.locator('.stale-note', { hasText: 'earlier run' }).waitFor();
    expect(await total.getAttribute('data-state')).toBe('stale');
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-saved-outputs.png'), fullPage: true });
    await p.getByRole('button', { name: 'Run all' }).click();
    await p.locator('li.cell[data-cell="e5f6a7b8"][data-state="success"]').waitFor();
    await total.locator('.stale-note').waitFor({ state: 'detached' });
  });

  it('refuses to save over a newer file, shows the diff, and overwrites only when asked', async () => {
    const p = await open('#/notebook/clash.nb.ts');
    const editor = cell(p, 'clash001').locator('.cm-content');
    await editor.click();
    await p.keyboard.press('Control+a');
    await p.keyboard.type('const a = 2');
    // Another editor writes the file meanwhile.
    const target = path.join(server.root, 'notebooks', 'clash.nb.ts');
    const theirs = file([['clash001', 'const a = 3']]);
    await writeFile(target, theirs);
    await p.getByRole('button', { name: 'Save', exact: true }).click();
    const banner = p.getByRole('alertdialog');
    await banner.waitFor();
    expect(await banner.locator('pre.diff').textContent()).toContain('+ const a = 3');
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-save-conflict.png'), fullPage: true });
    expect(await readFile(target, 'utf8')).toBe(theirs);
    await banner.getByRole('button', { name: 'Overwrite with mine' }).click();
    await p.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect(await readFile(target, 'utf8')).toContain('const a = 2');
  });

  it('keeps what was typed when the file reloads before the edit reaches the server, and shows the conflict', async () => {
    const p = await open('#/notebook/typing.nb.ts');
    // The editor sends typing once it pauses; hold that request until the server has taken the
    // disk's version, the order a slow network or a quick watcher gives.
    let held!: () => void;
    const sent = new Promise<void>((resolve) => {
      void p.route('**/api/notebooks/typing.nb.ts/cells/typing01', async (route) => {
        if (route.request().method() !== 'PATCH') return route.continue();
        resolve();
        await new Promise<void>((release) => {
          held = release;
        });
        await route.continue();
      });
    });
    const editor = cell(p, 'typing01').locator('.cm-content');
    await editor.click();
    await p.keyboard.press('Control+a');
    await p.keyboard.type('const b = 2');
    await sent;
    const target = path.join(server.root, 'notebooks', 'typing.nb.ts');
    const theirs = file([['typing01', 'const b = 3']]);
    await writeFile(target, theirs);
    await p.getByRole('status').filter({ hasText: 'Reloaded from disk' }).waitFor();
    expect(await editor.textContent()).toBe('const b = 2');

    held();
    const banner = p.getByRole('alertdialog');
    await banner.waitFor();
    expect(await banner.locator('pre.diff').textContent()).toContain('+ const b = 3');
    await p.getByRole('button', { name: 'Save', exact: true }).click();
    await banner.filter({ hasText: 'Not saved' }).waitFor();
    expect(await readFile(target, 'utf8')).toBe(theirs);
    // A merge shows the cell both sides changed; taking the disk's drops what was typed.
    await banner.getByRole('button', { name: 'Merge', exact: true }).click();
    const choice = banner.locator('fieldset.merge-conflict');
    await choice.waitFor();
    expect(await choice.locator('pre').allTextContents()).toEqual(['const b = 2', 'const b = 3']);
    await choice.getByLabel("Take the disk's").check();
    await banner.getByRole('button', { name: 'Merge with these choices' }).click();
    await p.getByRole('status').filter({ hasText: 'Merged with the file on disk and saved' }).waitFor();
    await cell(p, 'typing01').locator('.cm-content', { hasText: 'const b = 3' }).waitFor();
    expect(await readFile(target, 'utf8')).toBe(theirs);
  });

  it('follows an edit made on disk and re-runs the changed cell and its dependents', async () => {
    const p = await open('#/notebook/live.nb.ts');
    await p.getByRole('button', { name: 'Run all' }).click();
    await cell(p, 'live0002').locator('.outputs', { hasText: '20' }).waitFor();
    await server.write(
      'notebooks/live.nb.ts',
      file([
        ['live0001', 'const x = 5'],
        ['live0002', 'x * 10'],
      ]),
    );
    await cell(p, 'live0002').locator('.outputs', { hasText: '50' }).waitFor({ timeout: 15_000 });
    await cell(p, 'live0001').locator('.cm-content', { hasText: 'const x = 5' }).waitFor();
    await p.getByRole('status').filter({ hasText: 'Reloaded from disk' }).waitFor();
    await p.screenshot({ path: path.join(OUTPUT, 'notebook-live-reload.png'), fullPage: true });
  });
});
