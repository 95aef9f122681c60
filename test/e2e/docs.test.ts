import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * /docs in a real browser, offline: Swagger UI (bundled, no CDN) split by tag, every tag closed,
 * under a search box that matches tags, paths and summaries.
 */

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({ files: { 'agents/echo.ts': agentSource(`{ run: (input) => ({ response: input.query }) }`) } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe('/docs', () => {
  it('opens as one closed section per tag, a short page', async () => {
    const p = await open('');
    // Every script of the page is same-origin: a CDN request would fail offline.
    const requested: string[] = [];
    p.on('request', (req) => requested.push(req.url()));
    await p.goto(`${server.url}/docs`);
    // Swagger UI is a large bundle: on a busy machine it takes seconds to parse and draw.
    await p.locator('.opblock-tag-section').first().waitFor({ timeout: 30_000 });
    const tags = await p.locator('.opblock-tag-section h3').allTextContents();
    expect(tags.length).toBeGreaterThan(5);
    expect(tags.map((t) => t.trim())).toEqual(expect.arrayContaining(['agents', 'threads', 'platform']));
    expect(tags).toEqual([...tags].sort((a, b) => a.localeCompare(b)));
    expect(await p.locator('.opblock').count()).toBe(0);
    expect(await p.evaluate(() => document.documentElement.scrollHeight)).toBeLessThan(6000);
    expect(requested.every((url) => url.startsWith(server.url))).toBe(true);
    await p.screenshot({ path: path.join(OUTPUT, 'docs.png') });
  }, 60_000);

  it('finds operations by path or summary, wherever they are tagged', async () => {
    const p = await open('');
    await p.goto(`${server.url}/docs`);
    await p.locator('.opblock-tag-section').first().waitFor({ timeout: 30_000 });
    const search = p.locator('input.operation-filter-input');
    await search.fill('lineage');
    // Tags whose names do not match still show their matching operations (threads, notebook tools).
    await p.waitForFunction(() => document.querySelectorAll('.opblock-tag-section').length < 5);
    const tags = (await p.locator('.opblock-tag-section h3').allTextContents()).map((t) => t.trim());
    expect(tags).toContain('threads');
    expect(tags).not.toContain('agents');
    for (const heading of await p.locator('.opblock-tag-section h3').all()) await heading.click();
    await p.locator('.opblock-summary-path').first().waitFor();
    const paths = await p.locator('.opblock-summary-path').allTextContents();
    expect(paths.some((text) => text.includes('/threads/'))).toBe(true);
    expect(paths.every((text) => text.includes('lineage'))).toBe(true);

    // A tag's name keeps all of its operations.
    await search.fill('logs');
    await p.waitForFunction(() => [...document.querySelectorAll('.opblock-tag-section h3')].some((h) => h.textContent?.trim() === 'logs'));
    await search.fill('no operation is called this');
    await p.waitForFunction(() => document.querySelectorAll('.opblock-tag-section').length === 0);
  }, 60_000);
});
