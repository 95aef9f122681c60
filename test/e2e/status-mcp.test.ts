import { afterEach, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { useUiBrowser } from './browser.js';

/** The status view lists the MCP servers of `mcp.servers` (#32): idle until first used, failed with the reason. */

let server: TestServer | undefined;
let fake: FakeOpenAI | undefined;
const ui = useUiBrowser(() => server!.url);
afterEach(async () => {
  await server?.stop();
  await fake?.close();
  server = undefined;
});

describe('status view: MCP servers', () => {
  it('shows each server, its state and why it failed', async () => {
    fake = await startFakeOpenAI();
    server = await startTestServer({
      files: {
        'agents/lost.ts': `import { defineAgent } from 'hangar';\nexport default defineAgent({ instructions: 'x', tools: ['mcp:nowhere/*'] });\n`,
      },
      settings: {
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 },
        mcp: { servers: { nowhere: { command: '/nonexistent/mcp-server' }, later: { url: 'http://127.0.0.1:9/mcp' } } },
        watch: false,
      },
    });
    expect((await server.request('/api/v1/lost/invoke', { method: 'POST', json: { query: 'go' } })).status).toBe(502);
    const p = await ui.open('');
    const section = p.getByTestId('mcp-servers');
    await section.locator('tr[data-server="nowhere"]').waitFor();
    expect(await section.locator('tr[data-server="nowhere"]').textContent()).toMatch(/nowhere\s*stdio.*failed.*could not start/s);
    expect(await section.locator('tr[data-server="later"]').textContent()).toMatch(/later\s*http.*idle.*started on first use/s);
  });
});
