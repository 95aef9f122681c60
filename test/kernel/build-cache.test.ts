import { readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentSource, makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

/** An agent whose answer comes from a second workspace file, so a stale cache would answer the old text. */
const FILES = {
  'agents/greeter.ts': agentSource(`{ run: async () => greeting, version: '1.0.0' }`, `import { greeting } from '../lib/greeting.js';`),
  'lib/greeting.ts': `export const greeting = 'hello';\n`,
};

let server: TestServer | undefined;
afterEach(async () => server?.stop());

const invoke = async (s: TestServer) => (await s.request('/api/v1/greeter/invoke', { method: 'POST', json: { query: 'x' } })).body;
const cacheFiles = async (root: string) => readdir(path.join(root, '.hangar', 'build', 'dropins')).catch(() => [] as string[]);
const codeCacheDir = (root: string) => path.join(root, '.hangar', 'build', 'dropins-v8');
const finished = (s: TestServer) => s.logs.find((line) => line.includes('discovery finished'));

describe('drop-in bundles kept between starts', () => {
  it("reuses the last start's bundle, and rebuilds when a file it imports changed while no server ran", async () => {
    const root = await makeWorkspace(FILES);
    server = await startTestServer({ root });
    expect((await invoke(server)).response).toBe('hello');
    await server.stop();
    expect(await cacheFiles(root)).toHaveLength(1);

    server = await startTestServer({ root });
    expect((await invoke(server)).response).toBe('hello');
    expect(server.logs.find((line) => line.includes('discovery finished'))).toMatch(/cached=1\b/);
    await server.stop();

    // Same size, new content: only the modification time tells, and it must.
    await writeFile(path.join(root, 'lib/greeting.ts'), `export const greeting = 'howdy';\n`);
    const later = new Date(Date.now() + 5_000);
    await utimes(path.join(root, 'lib/greeting.ts'), later, later);
    server = await startTestServer({ root });
    expect((await invoke(server)).response).toBe('howdy');
    expect(server.logs.find((line) => line.includes('discovery finished'))).toMatch(/cached=0\b/);
  });

  it("keeps V8's code cache of each bundle, never gives an edited drop-in the old one, and loads past one V8 refuses", async () => {
    const root = await makeWorkspace(FILES);
    server = await startTestServer({ root });
    await server.stop();
    const [codeFile] = await readdir(codeCacheDir(root));
    expect(codeFile).toBeDefined();

    server = await startTestServer({ root });
    expect((await invoke(server)).response).toBe('hello');
    expect(finished(server)).toMatch(/code_cached=1\b/);
    await server.stop();

    await writeFile(path.join(root, 'lib/greeting.ts'), `export const greeting = 'hi there';\n`);
    server = await startTestServer({ root });
    expect((await invoke(server)).response).toBe('hi there');
    expect(finished(server)).toMatch(/code_cached=0\b/);
    await server.stop();

    // The right bundle's tag, data V8 cannot use: V8 refuses it and compiles the bundle. (In a new
    // process the refused cache is then written again; this server runs in the test's process,
    // whose V8 may answer from its own in-memory compilation cache without looking at it.)
    const file = path.join(codeCacheDir(root), codeFile!);
    const damaged = Buffer.concat([(await readFile(file)).subarray(0, 10), Buffer.alloc(64, 7)]);
    await writeFile(file, damaged);
    server = await startTestServer({ root });
    expect((await invoke(server)).response).toBe('hi there');
    expect(finished(server)).toMatch(/code_cached=1\b/);
  });

  it('ignores a damaged cache file and builds the drop-in', async () => {
    const root = await makeWorkspace(FILES);
    server = await startTestServer({ root });
    await server.stop();
    const [file] = await cacheFiles(root);
    await writeFile(path.join(root, '.hangar', 'build', 'dropins', file!), '{"key": "cut sho');
    server = await startTestServer({ root });
    expect((await invoke(server)).response).toBe('hello');
  });
});
