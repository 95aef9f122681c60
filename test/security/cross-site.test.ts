/**
 * Issue #18, item 2: no cross-site request. A body must be JSON (415 before anything runs), and a
 * state-changing request a browser sends from another origin is refused (403) — body or not —
 * while scripts (no Origin), the UI (same origin) and `allowedOrigins` keep working. The last test
 * drives real Chromium from an attacker page on another loopback origin.
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SUBSYSTEMS } from '../../core/app/subsystems.js';
import type { Subsystem } from '../../core/kernel/context.js';
import { type Browser, launchBrowser } from '../e2e/browser.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { rawRequest } from './raw.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** A workspace whose agent and notebook leave a file behind when they run, so a refused call provably did nothing. */
function workspace(marker: string) {
  return {
    'agents/echo.ts': agentSource(
      `{ run: async (i) => { appendFileSync(${JSON.stringify(marker)}, 'agent\\n'); return 'ok ' + i.query; } }`,
      `import { appendFileSync } from 'node:fs';`,
    ),
    'notebooks/mark.nb.ts': `// %% [code] id=mark0001\nimport { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(marker)}, 'notebook\\n');\n1 + 1\n`,
  };
}

async function start(settings: Record<string, unknown> = {}) {
  const s = await startTestServer({ files: {}, settings: settings as never });
  const marker = path.join(s.root, 'ran.txt');
  for (const [file, content] of Object.entries(workspace(marker))) await s.write(file, content);
  await eventually(async () => (await s.request('/api/v1/echo/health')).status === 200);
  return { s, marker };
}

describe('cross-site protection', () => {
  it('refuses a body that is not declared JSON with 415 {detail} before the agent runs', async () => {
    const { s, marker } = await start();
    server = s;
    const body = JSON.stringify({ query: 'hi' });
    for (const type of [
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      undefined,
    ]) {
      const headers: Record<string, string> = type ? { 'content-type': type } : {};
      const res = await rawRequest(s.port, 'POST', '/api/v1/echo/invoke', headers, body);
      expect([type, res.status, typeof res.body.detail]).toEqual([type, 415, 'string']);
    }
    // A form post with nothing in it still declares a type no script needs.
    const emptyForm = await rawRequest(s.port, 'POST', '/api/notebooks/mark.nb.ts/run', {
      'content-type': 'application/x-www-form-urlencoded',
      'content-length': '0',
    });
    expect(emptyForm.status).toBe(415);
    expect(existsSync(marker)).toBe(false);
    // What a script sends: JSON with its content type; a body-less POST needs nothing.
    expect(
      (await rawRequest(s.port, 'POST', '/api/v1/echo/invoke', { 'content-type': 'application/json; charset=utf-8' }, body)).status,
    ).toBe(200);
    expect((await rawRequest(s.port, 'POST', '/api/notebooks/mark.nb.ts/run')).status).toBe(200);
  });

  it('refuses state-changing requests from another origin (scheme, host and port) with 403, body or not', async () => {
    const { s, marker } = await start();
    server = s;
    const own = `http://127.0.0.1:${s.port}`;
    const foreign = [
      'http://evil.example',
      `http://localhost:${s.port + 1}`,
      `http://127.0.0.1:${s.port + 1}`,
      `https://127.0.0.1:${s.port}`,
      'null',
    ];
    const json = { 'content-type': 'application/json' };
    for (const origin of foreign) {
      const run = await rawRequest(s.port, 'POST', '/api/notebooks/mark.nb.ts/run', { origin });
      expect([origin, run.status, typeof run.body.detail]).toEqual([origin, 403, 'string']);
      expect((await rawRequest(s.port, 'POST', '/api/notebooks/mark.nb.ts/restart', { origin })).status).toBe(403);
      expect((await rawRequest(s.port, 'POST', '/api/v1/echo/threads', { origin, ...json }, '{"thread_id":"evil"}')).status).toBe(403);
      expect((await rawRequest(s.port, 'DELETE', '/api/v1/echo/threads/t1', { origin })).status).toBe(403);
    }
    expect((await rawRequest(s.port, 'POST', '/api/notebooks/mark.nb.ts/run', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect(
      (
        await rawRequest(s.port, 'POST', '/api/notebooks/mark.nb.ts/run', {
          'sec-fetch-site': 'same-site',
          origin: `http://localhost:${s.port + 1}`,
        })
      ).status,
    ).toBe(403);
    expect(existsSync(marker)).toBe(false);
    expect((await s.request('/api/v1/echo/threads')).body).not.toContain('evil');
    // Reads stay open to any page's GET (no CORS header lets it read the answer).
    expect((await rawRequest(s.port, 'GET', '/api/v1/agents', { origin: 'http://evil.example' })).status).toBe(200);
    // The server's own pages (Origin or Sec-Fetch-Site), and localhost spelled as the page was loaded.
    expect((await rawRequest(s.port, 'POST', '/api/v1/echo/threads', { origin: own, ...json }, '{"thread_id":"mine"}')).status).toBe(200);
    expect(
      (
        await rawRequest(
          s.port,
          'POST',
          '/api/v1/echo/invoke',
          { origin: `http://localhost:${s.port}`, host: `localhost:${s.port}`, ...json },
          '{"query":"a"}',
        )
      ).status,
    ).toBe(200);
    expect(
      (await rawRequest(s.port, 'POST', '/api/v1/echo/invoke', { 'sec-fetch-site': 'same-origin', ...json }, '{"query":"b"}')).status,
    ).toBe(200);
  });

  it('trusts the origins listed in allowedOrigins, and only those', async () => {
    const { s } = await start({ allowedOrigins: ['http://localhost:5173'] });
    server = s;
    const json = { 'content-type': 'application/json' };
    expect(
      (
        await rawRequest(
          s.port,
          'POST',
          '/api/v1/echo/invoke',
          { origin: 'http://localhost:5173', 'sec-fetch-site': 'same-site', ...json },
          '{"query":"a"}',
        )
      ).status,
    ).toBe(200);
    expect(
      (await rawRequest(s.port, 'POST', '/api/v1/echo/invoke', { origin: 'http://localhost:5174', ...json }, '{"query":"a"}')).status,
    ).toBe(403);
  });

  it('lets a route that lists another content type in config.bodyTypes take it, as a Buffer, and nothing else', async () => {
    const upload: Subsystem = {
      name: 'upload-test',
      routes(app) {
        app.post('/api/test/upload', { config: { bodyTypes: ['text/csv'] } }, async (req) => ({
          bytes: (req.body as Buffer).length,
          text: String(req.body),
        }));
      },
    };
    server = await startTestServer({ start: { subsystems: [...SUBSYSTEMS, upload] } });
    const csv = await rawRequest(server.port, 'POST', '/api/test/upload', { 'content-type': 'text/csv; charset=utf-8' }, 'a,b\n1,2\n');
    expect([csv.status, csv.body]).toEqual([200, { bytes: 8, text: 'a,b\n1,2\n' }]);
    expect((await rawRequest(server.port, 'POST', '/api/test/upload', { 'content-type': 'text/plain' }, 'a')).status).toBe(415);
    // The allow-list is about the body type only: another origin is still refused.
    expect(
      (await rawRequest(server.port, 'POST', '/api/test/upload', { 'content-type': 'text/csv', origin: 'http://evil.example' }, 'a'))
        .status,
    ).toBe(403);
  });

  describe('in a browser', () => {
    let browser: Browser | undefined;
    let attacker: http.Server | undefined;
    beforeAll(async () => {
      browser = await launchBrowser();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await new Promise((resolve) => (attacker ? attacker.close(resolve) : resolve(undefined)));
    });

    it('a page on another origin can neither create a thread, run a notebook, restart its kernel nor invoke an agent', async () => {
      const { s, marker } = await start();
      server = s;
      const target = `http://127.0.0.1:${s.port}`;
      // Everything a page may send without a preflight: no-cors fetches and a form post.
      const page = `<!doctype html><html><body>
<form id="f" method="POST" action="${target}/api/v1/echo/invoke" enctype="text/plain" target="sink"><input name='{"query":"x","a":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
(async () => {
  const t = ${JSON.stringify(target)};
  const sends = [
    fetch(t + '/api/v1/echo/threads', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{"thread_id":"evil"}' }),
    fetch(t + '/api/v1/echo/threads', { method: 'POST', mode: 'no-cors' }),
    fetch(t + '/api/notebooks/mark.nb.ts/run', { method: 'POST', mode: 'no-cors' }),
    fetch(t + '/api/notebooks/mark.nb.ts/restart', { method: 'POST', mode: 'no-cors' }),
    fetch(t + '/api/v1/echo/invoke', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{"query":"x"}' }),
  ];
  await Promise.allSettled(sends);
  document.getElementById('f').submit();
  document.title = 'sent';
})();
</script></body></html>`;
      attacker = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(page));
      await new Promise<void>((resolve) => attacker!.listen(0, '127.0.0.1', resolve));
      const tab = await browser!.context.newPage();
      await tab.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
      await tab.waitForFunction(() => document.title === 'sent');
      // Six requests reached Hangar and were answered 403 or 415; none ran anything.
      await eventually(() => s.logs.filter((l) => / status=(403|415)\b/.test(l) && / method=POST\b/.test(l)).length >= 6);
      await tab.close();
      expect(existsSync(marker)).toBe(false);
      expect((await s.request('/api/v1/echo/threads')).text).not.toContain('evil');
      expect(s.logs.filter((l) => / method=POST\b/.test(l) && / status=2\d\d\b/.test(l))).toEqual([]);
    });
  });
});
