import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { useUiBrowser } from './browser.js';

/** The status view lists the supervised drop-in hosts (#17): each host's kind, heap cap and restarts with why. */

let server: TestServer;
const ui = useUiBrowser(() => server.url);
beforeAll(async () => {
  server = await startTestServer({
    files: {
      'endpoints/hog.ts': `import { defineEndpoint } from 'hangar';\nexport default defineEndpoint({ max_heap_mb: 64, handler: () => { const keep: string[][] = []; for (;;) keep.push(new Array(1e5).fill('x'.repeat(8))); } });\n`,
    },
    settings: { watch: false },
  });
}, 60_000);
afterAll(() => server.stop());

describe('status view: drop-in hosts', () => {
  it('shows a host that ran out of memory, with its restart and why', { timeout: 60_000 }, async () => {
    expect((await server.request('/api/v1/endpoints/hog', { method: 'POST', json: {} })).status).toBe(500);
    const p = await ui.open('');
    const row = p.getByTestId('dropin-hosts').locator('tr[data-host="endpoint:hog"]');
    await row.waitFor();
    expect(await row.textContent()).toMatch(/hog\s*endpoint.*64 MB.*1 \(1 out of memory\).*out of memory: endpoint hog exceeded 64 MB/s);
  });
});
