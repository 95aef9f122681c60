import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, inject } from 'vitest';

/**
 * Chromium driven by playwright-core, with a fresh profile per launch. Which Chromium is resolved
 * once per run (test/support/test-browser.ts: HANGAR_TEST_BROWSER, a system one, else the one
 * the `@sparticuz/chromium` package ships). The flags keep the browser off the network and quiet
 * (no component updates, sync or QUIC probes), since the tests must pass offline. A persistent
 * context because Playwright reserves --user-data-dir.
 */
export const CHROMIUM = inject('testBrowser').executablePath;
export const OUTPUT = path.resolve('test-output');

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'hangar-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 820 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
  });
  await mkdir(OUTPUT, { recursive: true });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Opens UI pages that record script errors and Content-Security-Policy violations — neither is
 * acceptable in any view. One page at a time: `finish()` closes it (an open page keeps websockets
 * that would hold up the server's stop) and returns what it recorded.
 */
export class UiPages {
  private page: Page | undefined;
  private errors: string[] = [];

  constructor(
    private readonly browser: () => Browser,
    private readonly baseUrl: () => string,
  ) {}

  async open(route: string): Promise<Page> {
    this.errors = [];
    const page = (this.page = await this.browser().context.newPage());
    // Fail a wait with its own message well before the test times out.
    page.setDefaultTimeout(8000);
    page.on('pageerror', (err) => this.errors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) this.errors.push(msg.text());
    });
    await page.goto(`${this.baseUrl()}/ui/${route}`);
    return page;
  }

  async finish(): Promise<string[]> {
    await this.page?.close();
    this.page = undefined;
    return this.errors;
  }
}

/**
 * The browser side of a UI test file: one browser for the file, and pages whose script errors and
 * CSP violations fail the test that opened them. Call it before the file's own hooks: after-hooks
 * run in reverse order, so the file's server stops before the browser closes.
 */
export function useUiBrowser(baseUrl: () => string): { open(route: string): Promise<Page> } {
  let browser: Browser | undefined;
  const pages = new UiPages(() => browser!, baseUrl);
  beforeAll(async () => {
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    expect(await pages.finish()).toEqual([]);
  });
  return { open: (route) => pages.open(route) };
}
