/**
 * Issue #23: the `notebook dev` page edits cells with the UI notebook view's CodeMirror editor
 * (one `.cm-editor` per cell), and what the page did with text areas still works: Shift+Enter
 * runs the cell and its output appears, Save writes the edit to the file, and a change on disk
 * reloads the page (dev's hot reload). The servers are the ones `hangar notebook dev` starts.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, notebookCli } from '../../core/app/cli/notebook.js';
import { type RunningNotebookServer, startNotebookServer } from '../../core/notebook/server.js';
import { type Browser, launchBrowser, OUTPUT } from './browser.js';

const notebook = (first: string, second: string) =>
  `// @hangar-notebook {"name":"dev-editor","created_at":"2026-01-01T00:00:00.000Z","metadata":{}}\n\n` +
  `// %% [code] id=first001\n${first}\n\n// %% [code] id=second01\n${second}\n`;

/**
 * dev's backend trusts exactly the frontend's origin, so the frontend's port is chosen before both
 * start (with `--frontend-port 0` the backend could not know it).
 */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

let browser: Browser;
let root = '';
let file = '';
let frontend: RunningNotebookServer;
let stop: () => void;
let done: Promise<number>;

beforeAll(async () => {
  browser = await launchBrowser();
  root = await mkdtemp(path.join(tmpdir(), 'nb-dev-editor-'));
  await mkdir(path.join(root, 'notebooks'));
  file = path.join(root, 'notebooks', 'dev-editor.nb.ts');
  await writeFile(file, notebook("const greeting = 'hello'", '1 + 1'));
  let listening!: (servers: RunningNotebookServer[]) => void;
  const ready = new Promise<RunningNotebookServer[]>((resolve) => (listening = resolve));
  let stderr = '';
  const io: CliIo = {
    out: () => undefined,
    err: (text) => (stderr += text),
    stopSignal: new Promise<void>((resolve) => (stop = resolve)),
    onListening: listening,
  };
  const args = ['dev', '--file', file, '--frontend-port', String(await freePort()), '--backend-port', '0', '--no-browser'];
  done = notebookCli(args, io);
  [frontend] = (await Promise.race([ready, done.then((code) => Promise.reject(new Error(`exited ${code}: ${stderr}`)))])) as [
    RunningNotebookServer,
  ];
}, 60_000);

afterAll(async () => {
  // The browser first: an open page's websockets would hold up the servers' stop.
  await browser?.close();
  stop?.();
  expect(await done).toBe(0);
  await rm(root, { recursive: true, force: true });
});

/** The page, recording script errors and CSP violations: neither is acceptable. */
async function openPage(url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || (msg.type() === 'warning' && /cell editor/.test(msg.text())))
      problems.push(msg.text() + ' ' + msg.location().url);
  });
  await page.goto(url);
  return { page, problems };
}

const source = (page: Page, cell: string) => page.locator(`[data-id="${cell}"] .cm-content`);
/** The text of a cell's output frame (looked up each time: a re-render replaces the frame). */
const outputOf = (page: Page, cell: string) =>
  page
    .frameLocator(`[data-id="${cell}"] iframe.out-frame`)
    .locator('body')
    .textContent({ timeout: 1000 })
    .catch(() => '');

describe('notebook dev: cells are edited with the UI notebook view’s CodeMirror editor', () => {
  it('shows one editor per cell; typing and Shift+Enter runs the cell, Save writes it, a change on disk reloads', async () => {
    const { page, problems } = await openPage(`${frontend.url}/?notebook=dev-editor.nb.ts`);

    await page.locator('.cell .cm-editor').nth(1).waitFor();
    expect(await page.locator('.cell').count()).toBe(2);
    expect(await page.locator('.cell .cm-editor').count()).toBe(2);
    expect(await page.locator('.cell textarea').count()).toBe(0);
    await expect.poll(() => source(page, 'second01').textContent()).toBe('1 + 1');
    // The component's accessible name, as in the UI.
    expect(await source(page, 'second01').getAttribute('aria-label')).toBe('Source of cell 2');
    // Highlighted as TypeScript: the first cell's keyword has a token span of its own.
    expect(await page.locator('[data-id="first001"] .cm-line span', { hasText: 'const' }).count()).toBeGreaterThan(0);

    await source(page, 'second01').click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('greeting.length * 8 + 2');
    await page.keyboard.press('Shift+Enter');

    await expect.poll(() => outputOf(page, 'second01')).toContain('42');
    await page.waitForSelector('[data-id="second01"][data-state="success"]');
    await expect.poll(() => page.locator('[data-id="second01"] .meta').textContent()).toMatch(/^\[\d+\] code second01 · success$/);
    // The edit went through the editor: the session ran the new source and still holds it.
    await expect.poll(() => source(page, 'second01').textContent()).toBe('greeting.length * 8 + 2');
    // A re-render (the run's cells-changed) left the typed-in editor where it was, focused.
    expect(await page.evaluate(() => document.activeElement?.closest('[data-id]')?.getAttribute('data-id'))).toBe('second01');
    await page.screenshot({ path: path.join(OUTPUT, 'notebook-dev-editor.png') });

    // Answered once the session has written the file and noted its version as its own.
    const saved = page.waitForResponse((r) => r.url().endsWith('/save') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Save' }).click();
    expect((await saved).status()).toBe(200);
    expect(await readFile(file, 'utf8')).toContain('greeting.length * 8 + 2');

    // dev's hot reload: a change on disk reloads the page, whose editor shows the file's text.
    await writeFile(file, notebook("const greeting = 'from disk'", 'greeting.length * 8 + 2'));
    await expect.poll(() => source(page, 'first001').textContent(), { timeout: 15_000 }).toBe("const greeting = 'from disk'");
    expect(await page.locator('.cell .cm-editor').count()).toBe(2);

    expect(problems).toEqual([]);
    await page.close();
  });

  it('falls back to text areas that still run with Shift+Enter when the editor bundle does not load', async () => {
    // The page's server as `notebook start` makes it, with a bundle whose build fails (a syntax error in the views).
    const server = await startNotebookServer({
      root,
      port: 0,
      ui: true,
      editorScript: () => Promise.reject(new Error('desktop/views/notebook/editor.ts: build failed')),
    });
    try {
      const page = await browser.context.newPage();
      page.setDefaultTimeout(15_000);
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      await page.goto(`${server.url}/?notebook=dev-editor.nb.ts`);
      const area = page.locator('[data-id="second01"] textarea');
      await area.waitFor();
      expect(await page.locator('.cm-editor').count()).toBe(0);
      await area.fill('6 * 7');
      await area.press('Shift+Enter');
      await expect.poll(() => outputOf(page, 'second01')).toContain('42');
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await server.close();
    }
  });
});
