import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { OUTPUT, useUiBrowser } from './browser.js';

/**
 * The studio in a real browser: a banner per drop-in that fails to load, with its code frame,
 * that appears on the save that breaks the file and goes on the save that fixes it (the live
 * channel carries the workspace's problems); and every thread of an agent, whoever created it.
 */

const echo = agentSource(`{ description: 'Echoes the query', run: (input) => ({ response: 'echo: ' + input.query }) }`);
const broken = `import { defineAgent } from 'hangar';
export default defineAgent({
  description: 'Broken on purpose',
  run: (input) => ({ response: input.query + }),
});
`;

let server: TestServer;
const { open } = useUiBrowser(() => server.url);

beforeAll(async () => {
  server = await startTestServer({ files: { 'agents/echo.ts': echo, 'agents/broken.ts': broken } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe('studio banner', () => {
  it('shows a failing drop-in with its file, line and code frame, and clears it when the file is fixed', async () => {
    const p = await open('#/studio');
    const banner = p.locator('[data-testid="problem"][data-entry="agents/broken.ts"]');
    await banner.waitFor();
    expect(await banner.getByRole('heading').textContent()).toContain('agents/broken.ts failed to load');
    expect(await banner.locator('.where').textContent()).toMatch(/^agents\/broken\.ts:4:\d+$/);
    const frame = await banner.getByTestId('code-frame').textContent();
    expect(frame).toContain('run: (input) => ({ response: input.query + }),');
    expect(frame).toContain('^');
    await p.screenshot({ path: path.join(OUTPUT, 'studio-banner.png'), fullPage: true });

    // Fixed on disk: the banner goes without a reload, and the agent is listed.
    await server.write('agents/broken.ts', agentSource(`{ description: 'Fixed now', run: () => ({ response: 'ok' }) }`));
    await banner.waitFor({ state: 'detached', timeout: 15_000 });
    await p.locator('.agent-grid > li', { hasText: 'Fixed now' }).waitFor();

    // Broken again by a save while the page is open: the banner comes back, live.
    await server.write('agents/echo.ts', 'export default {{;\n');
    await p.locator('[data-testid="problem"][data-entry="agents/echo.ts"]').waitFor({ timeout: 15_000 });
    await server.write('agents/echo.ts', echo);
    await p.locator('[data-testid="problem"]').first().waitFor({ state: 'detached', timeout: 15_000 });
  });
});

describe('threads in the studio', () => {
  it('lists threads created through the API, also ones created while the studio is open', async () => {
    const made = await server.request('/api/v1/echo/threads', { method: 'POST', json: { title: 'Made by a script' } });
    expect(made.status).toBe(200);
    const p = await open('#/studio/echo');
    const list = p.getByTestId('conversations').getByRole('list', { name: 'Threads' });
    await list.getByRole('button', { name: /Made by a script/ }).waitFor();

    await server.request('/api/v1/echo/chat', { method: 'POST', json: { content: 'hello from curl' } });
    const second = list.getByRole('button').nth(1);
    await p.waitForFunction(
      () => document.querySelectorAll('[data-testid="conversations"] ul[aria-label="Threads"] li').length === 3,
      null,
      {
        timeout: 15_000,
      },
    );
    await second.click();
    await p.getByTestId('messages').getByText('echo: hello from curl').waitFor();
  });
});
