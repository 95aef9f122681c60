/**
 * What a start of the bundled CLI loads (scripts/package-rewrites.mjs, core/lib/prom.ts): none of
 * the built-ins only HTTPS, HTTP/2 and compression need, none of ajv, acorn and croner (required by
 * their first use, core/lib/on-first-use.ts), and piscina from the bundle, not from node_modules.
 * Then the bundled piscina still starts its threads (an ML plugin predicts) and ws still serves the
 * UI's live channel.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repo, runCli, stopAll } from '../support/cli.js';
import { makeWorkspace } from '../support/server.js';

afterAll(() => stopAll());

/** Preloaded into the server: at ready, writes the built-ins it has loaded and the files `require` loaded. */
const REPORTER = `
const { subscribe } = require('node:diagnostics_channel');
subscribe('hangar:ready', () => {
  const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length));
  require('node:fs').writeFileSync(process.env.START_LOADS_REPORT, JSON.stringify({ builtins, required: Object.keys(require.cache) }));
});
`;

describe('a start of the bundled CLI', () => {
  it('loads no built-in it does not use, and piscina from the bundle; its pools and websockets still work', async () => {
    const root = await makeWorkspace();
    cpSync(path.join(repo, 'plugins', 'iris'), path.join(root, 'plugins', 'iris'), { recursive: true });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-start-loads-'));
    const reporter = path.join(dir, 'reporter.cjs');
    const report = path.join(dir, 'report.json');
    writeFileSync(reporter, REPORTER);
    const proc = runCli(['--no-window', '--root', root, '--port', '0'], {
      env: { NODE_OPTIONS: `--require ${reporter}`, START_LOADS_REPORT: report, NODE_COMPILE_CACHE: dir },
    });
    const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(await proc.line(/ready at/))![1]!;

    const loaded = JSON.parse(readFileSync(report, 'utf8')) as { builtins: string[]; required: string[] };
    for (const unused of ['http2', 'https', 'tls', 'zlib']) expect(loaded.builtins).not.toContain(unused);
    // The check can fail: the server does load what it needs.
    expect(loaded.builtins).toEqual(expect.arrayContaining(['http', 'worker_threads', 'sqlite']));
    expect(loaded.required.filter((file) => file.includes(`${path.sep}piscina${path.sep}`))).toEqual([]);
    // ajv, acorn and croner are left in node_modules for their first use (core/lib/on-first-use.ts); a start makes none.
    expect(loaded.required.filter((file) => /[\\/]node_modules[\\/](ajv|acorn|croner)[\\/]/.test(file))).toEqual([]);

    // A pool thread started by the bundled piscina, from its worker.js in node_modules.
    const deadline = Date.now() + 20_000;
    while ((await fetch(`${url}/api/v1/plugins/iris/health`)).status !== 200) {
      if (Date.now() > deadline) throw new Error('the plugin never became healthy');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const predicted = await fetch(`${url}/api/v1/plugins/iris/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: { sepal_length: 5.1, sepal_width: 3.5, petal_length: 1.4, petal_width: 0.2 } }),
    });
    expect(predicted.status).toBe(200);
    expect(await predicted.json()).toMatchObject({ output: { species: 'setosa' } });

    // The UI's live channel, served by ws (its first message is the workspace).
    const socket = new WebSocket(`${url.replace('http', 'ws')}/api/v1/events`);
    const first = await new Promise<string>((resolve, reject) => {
      socket.addEventListener('message', (event) => resolve(String(event.data)), { once: true });
      socket.addEventListener('error', () => reject(new Error('the websocket failed')), { once: true });
    });
    socket.close();
    expect(first.length).toBeGreaterThan(0);

    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
  }, 60_000);
});
