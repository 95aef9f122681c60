/**
 * The Host check (DNS rebinding) with its near misses (#30): a name that merely begins or ends with
 * an allowed one, the allowed name with another port or letter case, and an `allowedHosts` entry.
 * A prefix or substring match would let `localhost.evil.example` — a name an attacker controls and
 * can point at 127.0.0.1 — through, so each of those must be refused.
 */
import net from 'node:net';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { allowedHostNames, hostNameOf } from '../../core/http/security.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** The status of a raw HTTP/1.1 GET with the Host header given verbatim. */
function statusWithHost(port: number, host: string, pathname = '/health'): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
    );
    let data = '';
    socket.on('data', (d) => (data += d));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}

/** 101 when a websocket upgrade with this Host header opened, else the refusal's status. */
function upgradeWithHost(port: number, host: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/events`, { headers: { host } });
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('error', () => resolve(-1));
  });
}

const refused = (port: number) => [
  'localhost.evil.example',
  `localhost.evil.example:${port}`,
  'evillocalhost',
  '127.0.0.1.evil.example',
  '127.0.0.10',
  'localhostx',
  'local',
  'hangar.test.evil.example',
  'evil.hangar.test',
  'xhangar.test',
  '',
];

const accepted = (port: number) => [
  'localhost',
  `localhost:${port}`,
  `LOCALHOST:${port}`,
  `127.0.0.1:${port}`,
  `[::1]:${port}`,
  'hangar.test',
  `Hangar.Test:${port}`,
];

describe('Host check near misses', () => {
  it('answers 403 to names that begin, end or overlap with an allowed one, and 200 to the allowed names themselves', async () => {
    server = await startTestServer({ settings: { allowedHosts: ['hangar.test'] } });
    const port = server.port;
    for (const host of refused(port)) expect([host, await statusWithHost(port, host)]).toEqual([host, 403]);
    for (const host of accepted(port)) expect([host, await statusWithHost(port, host)]).toEqual([host, 200]);
  });

  it('refuses the same near misses on websocket upgrades', async () => {
    server = await startTestServer({ settings: { allowedHosts: ['hangar.test'] } });
    const port = server.port;
    for (const host of ['localhost.evil.example', `localhost.evil.example:${port}`, 'evil.hangar.test', 'hangar.test.evil.example']) {
      expect([host, await upgradeWithHost(port, host)]).toEqual([host, 403]);
    }
    for (const host of [`localhost:${port}`, `hangar.test:${port}`]) expect([host, await upgradeWithHost(port, host)]).toEqual([host, 101]);
  });

  it('keeps refusing a name once refused, and accepting one once accepted (the verdict cache keys by the whole header)', async () => {
    server = await startTestServer();
    const port = server.port;
    for (let i = 0; i < 2; i++) {
      expect(await statusWithHost(port, 'localhost.evil.example')).toBe(403);
      expect(await statusWithHost(port, `localhost:${port}`)).toBe(200);
    }
  });
});

describe('the allowed host names', () => {
  it('are the loopback names, the bound host and allowedHosts in lower case; bound beyond loopback, also this machine and its addresses', () => {
    const loopback = allowedHostNames({ host: '127.0.0.1', allowedHosts: ['Hangar.Test'] });
    expect([...loopback].sort()).toEqual(['127.0.0.1', '::1', 'hangar.test', 'localhost']);
    const named = allowedHostNames({ host: 'MyBox.Local', allowedHosts: [] });
    expect(named.has('mybox.local')).toBe(true);
    expect(named.has('127.0.0.1')).toBe(true);
    expect(named.has(os.hostname().toLowerCase())).toBe(true);
    const addresses = Object.values(os.networkInterfaces()).flatMap((nets) => (nets ?? []).map((n) => n.address.toLowerCase()));
    for (const address of addresses) expect(named.has(address)).toBe(true);
    // Only beyond loopback: a loopback server does not answer to this machine's name.
    if (os.hostname().toLowerCase() !== 'localhost') expect(loopback.has(os.hostname().toLowerCase())).toBe(false);
  });

  it('hostNameOf drops the port and IPv6 brackets and lower-cases, and has no name for an empty or unparsable header', () => {
    expect(hostNameOf('LocalHost:8080')).toBe('localhost');
    expect(hostNameOf('[::1]:8080')).toBe('::1');
    expect(hostNameOf(undefined)).toBeUndefined();
    expect(hostNameOf('')).toBeUndefined();
    expect(hostNameOf('a b')).toBeUndefined();
  });
});
