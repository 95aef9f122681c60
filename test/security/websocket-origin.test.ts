/**
 * Issue #18, item 4: websocket upgrades compare the whole origin — scheme, host and port — so a page
 * on another localhost port cannot subscribe to `/api/v1/events` or a notebook's live channel.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startNotebookServer } from '../../core/notebook/server.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  await cleanup?.();
  cleanup = undefined;
});

/** The status of an upgrade attempt: 101 when the socket opened, else the refusal's status. */
function upgrade(url: string, origin?: string, host?: string): Promise<number> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = {};
    if (host) headers.host = host;
    const ws = new WebSocket(url, { headers, ...(origin ? { origin } : {}) });
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('error', () => resolve(-1));
  });
}

const notebook = '// %% [code] id=a0000001\n1 + 1\n';

describe('websocket origin', () => {
  it('refuses another port, another scheme and null on /api/v1/events and /api/notebooks/ws, and accepts the page its own origin served', async () => {
    server = await startTestServer({ files: { 'notebooks/n.nb.ts': notebook } });
    const port = server.port;
    for (const route of ['/api/v1/events', '/api/notebooks/ws?notebook=n.nb.ts']) {
      const url = `ws://127.0.0.1:${port}${route}`;
      for (const origin of [
        `http://localhost:9999`,
        `http://127.0.0.1:${port + 1}`,
        `https://127.0.0.1:${port}`,
        'null',
        'http://evil.example',
      ]) {
        expect([route, origin, await upgrade(url, origin)]).toEqual([route, origin, 403]);
      }
      expect(await upgrade(url, `http://127.0.0.1:${port}`)).toBe(101);
      expect(await upgrade(url, `http://localhost:${port}`, `localhost:${port}`)).toBe(101);
      // Not a browser: no Origin at all.
      expect(await upgrade(url)).toBe(101);
    }
  });

  it('accepts an origin listed in allowedOrigins', async () => {
    server = await startTestServer({ settings: { allowedOrigins: ['http://localhost:5173'] } });
    expect(await upgrade(`ws://127.0.0.1:${server.port}/api/v1/events`, 'http://localhost:5173')).toBe(101);
    expect(await upgrade(`ws://127.0.0.1:${server.port}/api/v1/events`, 'http://localhost:5174')).toBe(403);
  });

  it("the notebook CLI's backend accepts its dev frontend's origin and no other port", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'hangar-nb-'));
    await mkdir(path.join(root, 'notebooks'));
    await writeFile(path.join(root, 'notebooks', 'n.nb.ts'), notebook);
    const backend = await startNotebookServer({ root, port: 0, allowOrigin: 'http://127.0.0.1:5999' });
    cleanup = async () => {
      await backend.close();
      await rm(root, { recursive: true, force: true });
    };
    const url = `ws://127.0.0.1:${backend.port}/api/notebooks/ws?notebook=n.nb.ts`;
    expect(await upgrade(url, 'http://127.0.0.1:5999')).toBe(101);
    expect(await upgrade(url, `http://127.0.0.1:${backend.port}`)).toBe(101);
    expect(await upgrade(url, 'http://127.0.0.1:6000')).toBe(403);
    // And its HTTP API takes state-changing calls from the same two origins only.
    const run = (origin: string) =>
      fetch(`http://127.0.0.1:${backend.port}/api/notebooks/n.nb.ts/run`, { method: 'POST', headers: { origin } }).then((r) => r.status);
    expect(await run('http://127.0.0.1:6000')).toBe(403);
    expect(await run('http://127.0.0.1:5999')).toBe(200);
  });
});
