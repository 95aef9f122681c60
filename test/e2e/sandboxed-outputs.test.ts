/**
 * Issue #18, item 3: a notebook's HTML output is untrusted. An .ipynb whose stored output carries
 * a script must not get to read the API: not when its outputs.html is opened directly, not in the
 * UI's notebook view, not in the `notebook start` editor page, not in a `notebook app`. The
 * script runs (as a chart library would) but in a sandboxed, opaque origin: it records what its
 * fetch('/api/v1/agents') got and whether it could touch the page around it, and the test reads
 * that record from the frame.
 */
import path from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppServer, startNotebookServer } from '../../core/notebook/server.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { type Browser, launchBrowser } from './browser.js';

/** What the attacker's output does: read the agent list, and reach into the page that shows it. */
const PAYLOAD = [
  '<p id="greeting">hello from an output</p>',
  '<script>',
  "  document.body.dataset.result = 'pending';",
  "  try { parent.document.body.dataset.pwned = 'yes'; document.body.dataset.parent = 'reached'; } catch (e) { document.body.dataset.parent = 'blocked'; }",
  "  fetch('/api/v1/agents').then((r) => r.text()).then((t) => { document.body.dataset.result = 'read: ' + t; }, (e) => { document.body.dataset.result = 'blocked: ' + e.message; });",
  '</script>',
].join('\n');

const ipynb = JSON.stringify({
  nbformat: 4,
  nbformat_minor: 5,
  metadata: {},
  cells: [
    {
      id: 'evil0001',
      cell_type: 'code',
      source: '1 + 1',
      metadata: {},
      execution_count: 1,
      outputs: [{ output_type: 'display_data', data: { 'text/html': PAYLOAD, 'text/plain': 'hello' }, metadata: {} }],
    },
  ],
});

let browser: Browser;
let server: TestServer;

beforeAll(async () => {
  browser = await launchBrowser();
  server = await startTestServer({
    files: {
      'notebooks/evil.ipynb': ipynb,
      // The same output made by code, for the app (which runs the notebook before serving it).
      'notebooks/evil.nb.ts': `// %% [code] id=evil0002\nhtml(${JSON.stringify(PAYLOAD)})\n`,
      'agents/secret-agent.ts': agentSource(`{ description: 'TOP-SECRET-DESCRIPTION', run: async () => 'x' }`),
    },
    settings: { watch: false },
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await browser?.close();
});

/** A page that records script errors and CSP violations of the app itself. */
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

/** The record the payload left in `frame`, once its fetch settled. */
async function outcome(frame: Frame): Promise<Record<string, string | null | undefined>> {
  await frame.waitForFunction(() => document.body?.dataset.result && document.body.dataset.result !== 'pending');
  return frame.evaluate(() => ({ ...document.body.dataset, greeting: document.getElementById('greeting')?.textContent ?? null }));
}

async function frameOf(page: Page, selector: string): Promise<Frame> {
  const element = await page.waitForSelector(selector, { state: 'attached' });
  const frame = await element.contentFrame();
  if (!frame) throw new Error(`${selector} has no frame`);
  return frame;
}

/** `framed`: the output was shown inside a page, which it must not reach either. */
function expectContained(record: Record<string, string | null | undefined>, framed = true) {
  expect(record.result).toMatch(/^blocked: /);
  expect(JSON.stringify(record)).not.toContain('TOP-SECRET-DESCRIPTION');
  if (framed) expect(record.parent).toBe('blocked');
  // It did run: a sandbox that kept the scripts would break every chart library.
  expect(record.greeting).toBe('hello from an output');
}

describe('a script in a notebook output cannot read the API', () => {
  it('GET …/cells/{cell}/outputs.html is served sandboxed, and its script reads nothing', async () => {
    const route = '/api/notebooks/evil.ipynb/cells/evil0001/outputs.html';
    const direct = await server.request(route);
    expect(direct.status).toBe(200);
    const csp = direct.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/(^|;)\s*sandbox\b/);
    expect(csp).not.toContain('allow-same-origin');
    expect(direct.headers.get('x-content-type-options')).toBe('nosniff');

    const { page } = await openPage(server.url + route);
    expectContained(await outcome(page.mainFrame()), false);
    await page.close();
  });

  it('in the UI notebook view, the output runs in a sandboxed frame', async () => {
    const { page, problems } = await openPage(`${server.url}/ui/#/notebook/evil.ipynb`);
    const selector = 'li.cell[data-cell="evil0001"] iframe.out-frame';
    const frame = await frameOf(page, selector);
    expect(await page.getAttribute(selector, 'sandbox')).toBe('allow-scripts');
    expectContained(await outcome(frame));
    expect(await page.evaluate(() => document.body.dataset.pwned)).toBeUndefined();
    // The frame grew to its content.
    await page.waitForFunction((s) => (document.querySelector(s) as HTMLElement).offsetHeight > 16, selector);
    // The app itself broke no rule of its own CSP in showing it.
    expect(problems).toEqual([]);
    await page.close();
  });

  it('in the `notebook start` editor page, outputs are sandboxed frames', async () => {
    const editor = await startNotebookServer({ root: server.root, port: 0, ui: true });
    try {
      const { page, problems } = await openPage(`${editor.url}/?notebook=evil.ipynb`);
      const selector = '[data-id="evil0001"] iframe.out-frame';
      const frame = await frameOf(page, selector);
      expect(await page.getAttribute(selector, 'sandbox')).toBe('allow-scripts');
      const record = await outcome(frame);
      expect(record.result).toMatch(/^blocked: /);
      expect(record.parent).toBe('blocked');
      expect(await page.evaluate(() => document.body.dataset.pwned)).toBeUndefined();
      expect(problems).toEqual([]);
      await page.close();
    } finally {
      await editor.close();
    }
  });

  it('in a `notebook app`, the report is a sandboxed frame under a page of ours', async () => {
    const app = await startAppServer({ file: path.join(server.root, 'notebooks', 'evil.nb.ts'), port: 0, layout: 'linear' });
    try {
      const report = await fetch(`${app.url}/report`);
      expect(report.headers.get('content-security-policy')).toMatch(/(^|;)\s*sandbox allow-scripts\s*($|;)/);
      const { page, problems } = await openPage(app.url);
      const frame = await frameOf(page, 'iframe[src="report"]');
      expect(await page.getAttribute('iframe[src="report"]', 'sandbox')).toBe('allow-scripts');
      const record = await outcome(frame);
      expect(record.result).toMatch(/^blocked: /);
      expect(record.parent).toBe('blocked');
      // Re-run (our form, outside the frame) still works: it runs the notebook and reloads.
      await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Re-run' }).click()]);
      expect((await outcome(await frameOf(page, 'iframe[src="report"]'))).result).toMatch(/^blocked: /);
      expect(problems).toEqual([]);
      await page.close();
    } finally {
      await app.close();
    }
  });
});
