/**
 * bin/load-cli.cjs: the bundled CLI runs through a V8 code cache made once a start is ready (and
 * has answered a request, or half a second later), kept while V8 accepts it, and made again when
 * V8 rejects it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of bin/, without declarations
import { cacheFileOf } from '../../bin/load-cli.cjs';
import { repo, runCli, stopAll } from '../support/cli.js';
import { makeWorkspace } from '../support/server.js';

afterAll(() => stopAll());

async function until(check: () => boolean, label: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts a headless server with the cache in `dir`, waits for it to be ready, stops it. */
async function startAndStop(root: string, dir: string): Promise<void> {
  const proc = runCli(['--no-window', '--root', root, '--port', '0'], { env: { NODE_COMPILE_CACHE: dir } });
  await proc.line(/ready at/);
  // Nobody calls it: the cache, when one is due, is written half a second after the ready line.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  proc.child.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
}

describe('the CLI code cache', () => {
  it('is made after a start is ready, kept while accepted, and made again when V8 rejects it', async () => {
    const root = await makeWorkspace();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-cli-cache-'));
    const saved = process.env.NODE_COMPILE_CACHE;
    process.env.NODE_COMPILE_CACHE = dir;
    const { cacheDir, cacheFile } = cacheFileOf(repo) as { cacheDir: string; cacheFile: string };
    if (saved === undefined) delete process.env.NODE_COMPILE_CACHE;
    else process.env.NODE_COMPILE_CACHE = saved;
    // A cache of an earlier build, under another name: removed when this build's is written.
    mkdirSync(cacheDir);
    writeFileSync(path.join(cacheDir, 'v0.0.0-x64-1-1.bin'), 'an earlier build');

    await startAndStop(root, dir);
    await until(() => existsSync(cacheFile), 'the cache file');
    expect(readdirSync(cacheDir)).toEqual([path.basename(cacheFile)]);
    // It holds the code a start compiled, not only what ran at load: megabytes, not kilobytes.
    const made = statSync(cacheFile);
    expect(made.size).toBeGreaterThan(1_000_000);

    // Accepted: the next start leaves it as it is.
    await startAndStop(root, dir);
    expect(statSync(cacheFile).mtimeMs).toBe(made.mtimeMs);

    // Rejected (not a cache V8 can use): the start runs as without one, then writes a good one.
    writeFileSync(cacheFile, Buffer.alloc(4096, 7));
    await startAndStop(root, dir);
    await until(() => statSync(cacheFile).size > 1_000_000, 'the cache made again');
    expect(readFileSync(cacheFile).subarray(0, 64).equals(Buffer.alloc(64, 7))).toBe(false);
  }, 120_000);
});
