/**
 * bin/load-cli.cjs compiles dist/cli.cjs as the build writes it, already in its CommonJS wrapper,
 * and still loads a bundle from before the wrapper: wrapped at load, decoded as UTF-8 when it is
 * not ASCII. Its code cache is made once the server is ready and has answered a request.
 */
import { channel } from 'node:diagnostics_channel';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of bin/, without declarations
import { CLI_WRAPPER_HEAD, CLI_WRAPPER_TAIL, loadCli, whenWarm } from '../../bin/load-cli.cjs';
import { cli, repo } from '../support/cli.js';

const made: string[] = [];
// After the file: a load without a cache leaves the cache to be made, which the tests of when it is
// made below then do, into these folders.
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A checkout whose dist/cli.cjs is `bundle`; the code cache goes to a folder of its own. */
function checkoutWith(bundle: Buffer): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hangar-load-cli-'));
  made.push(dir);
  mkdirSync(path.join(dir, 'dist'));
  writeFileSync(path.join(dir, 'dist', 'cli.cjs'), bundle);
  return dir;
}

const load = (dir: string) => {
  const saved = process.env.NODE_COMPILE_CACHE;
  process.env.NODE_COMPILE_CACHE = path.join(dir, 'cache');
  try {
    return loadCli(dir) as { word: string; file: string };
  } finally {
    if (saved === undefined) delete process.env.NODE_COMPILE_CACHE;
    else process.env.NODE_COMPILE_CACHE = saved;
  }
};

const BODY = 'exports.word = "caf\\u00e9"; exports.file = __filename;';

describe('loading the bundled CLI', () => {
  it('compiles a bundle the build wrapped as it is', () => {
    const dir = checkoutWith(Buffer.from(`${CLI_WRAPPER_HEAD}${BODY}${CLI_WRAPPER_TAIL}`, 'latin1'));
    const loaded = load(dir);
    expect(loaded.word).toBe('café');
    expect(loaded.file).toBe(path.join(dir, 'dist', 'cli.cjs'));
  });

  it('wraps a bundle from before the wrapper, ASCII or not', () => {
    expect(load(checkoutWith(Buffer.from(BODY, 'latin1'))).word).toBe('café');
    expect(load(checkoutWith(Buffer.from('exports.word = "café";', 'utf8'))).word).toBe('café');
  });

  it('is what the build writes', async () => {
    // `hangar` builds dist/ first when it is missing or stale (a fresh clone).
    expect((await cli(['--version'])).code).toBe(0);
    const text = readFileSync(path.join(repo, 'dist', 'cli.cjs'), 'latin1');
    expect(text.startsWith(CLI_WRAPPER_HEAD)).toBe(true);
    expect(text.endsWith(CLI_WRAPPER_TAIL)).toBe(true);
  });
});

describe('when the code cache is made', () => {
  const ready = channel('hangar:ready');
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  /** A real node:http server, whose answers node publishes as it finishes them. */
  async function server(): Promise<{ get(): Promise<void>; close(): Promise<void> }> {
    const srv = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`;
    return {
      get: async () => void (await (await fetch(url)).text()),
      close: () => new Promise((resolve) => srv.close(() => resolve())),
    };
  }

  it('is after the first response that follows ready, once', async () => {
    const srv = await server();
    try {
      let made = 0;
      whenWarm(() => made++);
      // A probe answered before ready (a 503) is not the whole start.
      await srv.get();
      await settle();
      expect(made).toBe(0);
      ready.publish({});
      await srv.get();
      await settle();
      expect(made).toBe(1);
      await srv.get();
      await settle();
      expect(made).toBe(1);
    } finally {
      await srv.close();
    }
  });

  it('is half a second after ready when no request comes', async () => {
    let made = 0;
    whenWarm(() => made++);
    ready.publish({});
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(made).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(made).toBe(1);
  });
});
