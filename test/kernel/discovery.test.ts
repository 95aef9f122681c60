import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RegistryChange } from '../../core/kernel/registry.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

const hello = (greeting: string) =>
  agentSource(`{ run: async (input) => ${JSON.stringify(greeting)} + ' ' + input.query, version: '1.0.0' }`);

let server: TestServer;
afterEach(async () => server?.stop());

const health = (name: string) => server.request(`/api/v1/${name}/health`);
const status = async () => (await server.request('/api/v1/status')).body;

describe('discovery and hot reload', () => {
  it('serves an agent dropped into agents/ without a restart, and forgets it when removed', async () => {
    server = await startTestServer();
    expect((await health('hello')).status).toBe(404);
    await server.write('agents/hello.ts', hello('hi'));
    await eventually(async () => (await health('hello')).status === 200);
    expect((await health('hello')).body).toEqual({ status: 'healthy', agent: 'hello', framework: 'hangar' });

    await rm(path.join(server.root, 'agents/hello.ts'));
    await eventually(async () => (await health('hello')).status === 404);
    expect((await health('hello')).body).toEqual({ detail: 'agent "hello" not found', code: 'HANGAR_AGENT_NOT_FOUND' });
  });

  it('picks up a changed file as a new version', async () => {
    server = await startTestServer({ files: { 'agents/hello.ts': hello('hi') } });
    const first = server.ctx.registry.get('agent', 'hello')!;
    await server.write('agents/hello.ts', hello('hi').replace("'1.0.0'", "'2.0.0'"));
    await eventually(async () => (await server.request('/api/v1/agents')).body.agents.hello.version === '2.0.0');
    const second = server.ctx.registry.get('agent', 'hello')!;
    expect(second.version).not.toBe(first.version);
    expect(second.loads).toBe(2);
  });

  it('keeps the last good version serving when a save breaks the file, shows the error, and clears it when fixed', async () => {
    server = await startTestServer({ files: { 'agents/hello.ts': hello('hi') } });
    await server.write('agents/hello.ts', `import { defineAgent } from 'hangar';\nexport default defineAgent({ run: async () => 'x' ;\n`);
    const problem = await eventually(async () => (await status()).errors.find((p: { line?: number }) => p.line === 2));
    expect(problem).toMatchObject({ kind: 'agent', entry: 'agents/hello.ts', file: 'agents/hello.ts', line: 2 });
    expect(problem.message).toMatch(/Expected/);
    expect((await health('hello')).status).toBe(200);
    expect((await health('hello')).body.status).toBe('degraded');
    expect(server.logs.some((l) => l.includes('drop-in error in agents/hello.ts:2'))).toBe(true);
    const page = await server.request('/status');
    expect(page.text).toContain('agents/hello.ts:2');

    await server.write('agents/hello.ts', hello('fixed'));
    await eventually(async () => (await status()).errors.length === 0);
    expect((await health('hello')).body.status).toBe('healthy');
  });

  it('reports a throw at import with the line in the source file', async () => {
    server = await startTestServer();
    await server.write(
      'agents/boom.ts',
      `import { defineAgent } from 'hangar';\nconst x = 1;\nthrow new Error('kaboom at import');\nexport default defineAgent({ run: async () => 'never' });\n`,
    );
    // Waits for the settled state: under load the watcher may first see the file half-written.
    const problem = await eventually(async () =>
      (await status()).errors.find((p: { message: string }) => p.message === 'kaboom at import'),
    );
    expect(problem).toMatchObject({ file: 'agents/boom.ts', line: 3, message: 'kaboom at import' });
    // It exists but cannot serve: 503 with where it failed (#29), not 404 as for an unknown agent.
    const answer = await health('boom');
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ error: 'kaboom at import', file: 'agents/boom.ts', line: 3 });
  });

  it('rejects an invalid definition with a message naming what is wrong', async () => {
    server = await startTestServer({ files: { 'agents/bad.ts': agentSource(`{ description: 'no run or graph' }`) } });
    const [problem] = (await status()).errors;
    expect(problem.message).toBe(
      "invalid agent definition: an agent needs `run`, `graph`, or `instructions` (the model answers, calling the agent's `tools`)",
    );
  });

  it('rejects a name reserved by a platform route', async () => {
    server = await startTestServer({ files: { 'agents/status.ts': hello('x') } });
    expect((await status()).errors[0].message).toContain('"status" is reserved');
  });

  it('reports two entries with the same name, naming both files, and lets the second take over when the first goes', async () => {
    server = await startTestServer({
      files: {
        'agents/a.ts': agentSource(`{ name: 'twin', run: async () => 'from a' }`),
        'agents/b.ts': agentSource(`{ name: 'twin', run: async () => 'from b' }`),
      },
    });
    const [problem] = (await status()).errors;
    expect(problem.message).toBe('duplicate agent name "twin": defined in agents/a.ts and agents/b.ts');
    expect(server.ctx.registry.get('agent', 'twin')!.file).toBe('agents/a.ts');

    await rm(path.join(server.root, 'agents/a.ts'));
    await eventually(() => server.ctx.registry.get('agent', 'twin')?.file === 'agents/b.ts');
    expect((await status()).errors).toEqual([]);
  });

  it('follows a rename of the file', async () => {
    server = await startTestServer({ files: { 'agents/old.ts': hello('hi') } });
    await rename(path.join(server.root, 'agents/old.ts'), path.join(server.root, 'agents/new.ts'));
    await eventually(async () => (await health('new')).status === 200 && (await health('old')).status === 404);
  });

  it('supports folder entries and rebuilds the entries that import a changed helper', async () => {
    server = await startTestServer({
      files: {
        'agents/shout/index.ts': agentSource(`{ run: async (input) => shout(input.query) }`, `import { shout } from './lib';`),
        'agents/shout/lib.ts': `export const shout = (s: string) => s.toUpperCase();\n`,
        'agents/_shared.ts': `export const ignored = true;\n`,
      },
    });
    expect(server.ctx.registry.list('agent').map((e) => e.name)).toEqual(['shout']);
    const before = server.ctx.registry.get('agent', 'shout')!.version;
    await server.write('agents/shout/lib.ts', `export const shout = (s: string) => s.toUpperCase() + '!';\n`);
    await eventually(() => server.ctx.registry.get('agent', 'shout')!.version !== before);
  });

  it('imports npm packages and node built-ins from a drop-in, sharing the host zod', async () => {
    server = await startTestServer({
      files: {
        'agents/typed.ts': agentSource(
          `{ input: z.object({ query: z.string() }), run: async (input) => path.basename(input.query) }`,
          `import path from 'node:path';\nimport { z } from 'zod';`,
        ),
      },
    });
    expect((await status()).errors).toEqual([]);
    expect((await health('typed')).status).toBe(200);
  });

  it('emits registry change events in order', async () => {
    server = await startTestServer();
    const changes: RegistryChange[] = [];
    server.ctx.registry.on('change', (c) => changes.push(c));
    await server.write('agents/ev.ts', hello('hi'));
    await eventually(() => changes.length >= 1);
    await server.write('agents/ev.ts', 'syntax error here (');
    await eventually(() => changes.some((c) => c.type === 'error'));
    await server.write('agents/ev.ts', hello('ok'));
    await eventually(() => changes.some((c) => c.type === 'error-cleared'));
    await rm(path.join(server.root, 'agents/ev.ts'));
    await eventually(() => changes.some((c) => c.type === 'removed'));
    expect(changes.map((c) => c.type)).toEqual(['added', 'error', 'updated', 'error-cleared', 'removed']);
  });

  it('keeps following an entry that an editor saves atomically, save after save', async () => {
    server = await startTestServer();
    for (const greeting of ['one', 'two', 'three', 'four']) {
      await server.write('agents/atomic.ts', hello(greeting)); // temporary file renamed over the entry
      await eventually(
        async () =>
          (await server.request('/api/v1/atomic/invoke', { method: 'POST', json: { query: 'x' } })).body?.response === `${greeting} x`,
      );
    }
  });

  it('takes a zero-byte entry for a save in progress: no error, then the content loads', async () => {
    server = await startTestServer();
    const changes: RegistryChange[] = [];
    server.ctx.registry.on('change', (c) => changes.push(c));
    await mkdir(path.join(server.root, 'agents'));
    await writeFile(path.join(server.root, 'agents/midsave.ts'), '');
    await new Promise((r) => setTimeout(r, 60));
    await server.ctx.discovery.idle();
    expect(changes).toEqual([]);
    expect((await status()).errors).toEqual([]);
    await writeFile(path.join(server.root, 'agents/midsave.ts'), hello('saved'));
    await eventually(() => changes.length >= 1);
    expect(changes.map((c) => c.type)).toEqual(['added']);
  });

  it('lists a newly discovered agent in /openapi.json without a restart', async () => {
    server = await startTestServer();
    // Agent routes are documented once; the agents are the values of their {agent} parameter.
    const agents = async (): Promise<string[]> => {
      const health = (await server.request('/openapi.json')).body.paths['/api/v1/{agent}/health'].get;
      return health.parameters.find((p: { name: string }) => p.name === 'agent').schema.enum ?? [];
    };
    expect(await agents()).not.toContain('fresh');
    await server.write('agents/fresh.ts', hello('hi'));
    await eventually(async () => (await agents()).includes('fresh'));
  });
});

describe('workspace folders', () => {
  it('watches a drop-in folder created after start', async () => {
    server = await startTestServer();
    await server.write('agents/late.ts', hello('late'));
    await eventually(async () => (await health('late')).status === 200);
    await rm(path.join(server.root, 'agents'), { recursive: true });
    await eventually(async () => (await health('late')).status === 404);
  });
});
