import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { damagedWorkspace } from '../support/damaged-store.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/** The status dashboard and the frame around every view (sidebar, live updates, keyboard, themes). */

const echo = agentSource(`{ description: 'Echoes the query', run: (input) => ({ response: 'echo: ' + input.query }) }`);
// A type error the bundler reports with file and line (line 3).
const broken = `import { defineAgent } from 'hangar';\n\nexport default defineAgent({ run: ( => 1 });\n`;

let server: TestServer | undefined;
const ui = useUiBrowser(() => server!.url);
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe('status view', () => {
  it('names a damaged store that was moved aside at start', async () => {
    server = await startTestServer({ root: await damagedWorkspace(), settings: { watch: false } });
    const p = await ui.open('');
    const store = p.getByTestId('store');
    await store.getByRole('alert').waitFor();
    expect(await store.textContent()).toMatch(
      /\.hangar\/hangar\.db \(sqlite\).*the database was damaged .* moved to\s*\.hangar\/hangar\.db\.damaged-/s,
    );
  });

  it('shows resources, drop-in errors with file and line, metrics and the task board', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': echo, 'agents/broken.ts': broken } });
    // A finished task, so the board has something in a column.
    const submitted = await server.request('/api/v1/tasks', {
      method: 'POST',
      json: { kind: 'agent', target: 'echo', input: { query: 'hi' } },
    });
    const p = await ui.open('');

    const resources = p.getByTestId('resources');
    await resources.getByText('Version').waitFor();
    expect(await resources.textContent()).toContain(server.root);
    expect(await resources.textContent()).toMatch(/1 agent/);

    const errors = p.getByTestId('dropin-errors');
    await errors.locator('tbody tr').first().waitFor();
    expect(await errors.locator('tbody tr td.mono').first().textContent()).toMatch(/^agents\/broken\.ts:3(:\d+)?/);

    const metrics = p.getByTestId('metrics');
    await metrics.getByText('Requests').waitFor();
    expect(Number((await metrics.locator('dd').first().textContent())!.replace(/\D/g, ''))).toBeGreaterThan(0);

    // The board has its six columns, and the submitted task lands in one of them.
    expect(submitted.status).toBe(202);
    const board = p.getByTestId('task-board');
    await board.locator('.task', { hasText: 'echo' }).first().waitFor({ timeout: 10_000 });
    expect((await board.locator('h3').allTextContents()).map((t) => t.replace(/\s*\d+$/, ''))).toEqual([
      'Submitted',
      'Working',
      'Input required',
      'Completed',
      'Failed',
      'Canceled',
    ]);
    expect(await board.locator('.task').count()).toBe(1);

    // The sidebar shows the broken kind's badge and the working agent.
    expect(await p.locator('[data-kind="agent"] .badge.error').textContent()).toBe('1 broken');
    await p.screenshot({ path: path.join(OUTPUT, 'status.png'), fullPage: true });
  });

  it('follows file changes live in the sidebar and the error list, without a reload', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': echo } });
    const p = await ui.open('#/status');
    await p.getByTestId('live-state').getByText('Live').waitFor();
    const agents = p.locator('[data-kind="agent"] li');
    await agents.first().waitFor();
    expect(await agents.allTextContents()).toEqual(['echo']);
    await p.evaluate(() => ((window as unknown as { marker: number }).marker = 42));

    await server.write('agents/second.ts', echo);
    await p.locator('[data-kind="agent"] li', { hasText: 'second' }).waitFor();
    expect(await agents.allTextContents()).toEqual(['echo', 'second']);

    await server.write('agents/second.ts', broken);
    await p.getByTestId('dropin-errors').locator('td.mono', { hasText: 'agents/second.ts' }).waitFor();
    // Same document all along: the updates came over the live channel.
    expect(await p.evaluate(() => (window as unknown as { marker: number }).marker)).toBe(42);
  });

  it('reconnects to the live channel after the server restarts', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': echo } });
    const { port, root } = server;
    const p = await ui.open('#/status');
    await p.getByTestId('live-state').getByText('Live').waitFor();
    await server.close();
    await p
      .getByTestId('live-state')
      .getByText(/Offline/)
      .waitFor();

    const files = await import('node:fs/promises');
    await files.writeFile(path.join(root, 'agents', 'later.ts'), echo);
    server = await startTestServer({ root, settings: { port } });
    await p.getByTestId('live-state').getByText('Live').waitFor({ timeout: 15_000 });
    await p.locator('[data-kind="agent"] li', { hasText: 'later' }).waitFor();
    const { rm } = files;
    const stop = server.stop;
    server.stop = async () => {
      await stop();
      await rm(root, { recursive: true, force: true });
    };
  });

  it('asks for a token when the server requires one, then works with it', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': echo }, settings: { auth: { tokens: { ada: 'open-sesame' } } } });
    const p = await ui.open('#/status');
    const prompt = p.getByRole('heading', { name: 'This server needs an API token' });
    await prompt.waitFor();
    await p.getByLabel('API token').fill('open-sesame');
    await p.getByRole('button', { name: 'Use token' }).click();
    await p.getByTestId('resources').getByText('Version').waitFor();
    await p.getByTestId('live-state').getByText('Live').waitFor();
    expect(await p.locator('[data-kind="agent"] li').allTextContents()).toEqual(['echo']);
    // Kept for the tab only, never as a cookie.
    expect(await p.context().cookies(server.url)).toEqual([]);
  });

  it('is usable from the keyboard and has light and dark themes', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': echo, 'agents/zeta.ts': echo } });
    const p = await ui.open('#/status');
    await p.locator('[data-kind="agent"] li').first().waitFor();

    // The first Tab reaches the skip link, which moves focus to the main content.
    await p.keyboard.press('Tab');
    expect(await p.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await p.keyboard.press('Enter');
    expect(await p.evaluate(() => document.activeElement?.id)).toBe('main');

    // Arrow keys move through the sidebar; Enter opens the agent in the studio.
    await p.locator('[data-kind="agent"] a', { hasText: 'echo' }).focus();
    await p.keyboard.press('ArrowDown');
    expect(await p.evaluate(() => document.activeElement?.textContent)).toBe('zeta');
    const outline = await p.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).toBe('solid');
    await p.keyboard.press('Enter');
    await p.getByRole('heading', { name: 'Studio · zeta' }).waitFor();
    // Focus follows to the new view's heading.
    await p.waitForFunction(() => document.activeElement?.textContent === 'Studio · zeta');

    await p.getByLabel('Theme').selectOption('dark');
    // The theme is applied in an effect, after the next paint.
    await p.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
    const background = await p.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(background).toBe('rgb(17, 19, 24)');
    await p.screenshot({ path: path.join(OUTPUT, 'studio-dark.png') });
    await p.reload();
    await p.getByRole('heading', { name: 'Studio · zeta' }).waitFor();
    await p.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
    await p.getByLabel('Theme').selectOption('light');
    await p.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(246, 247, 249)');
  });
});
