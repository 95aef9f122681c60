import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cli, repo } from '../support/cli.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

beforeAll(() => {
  // Also emits dist/types, the declarations package.json's exports name.
  execFileSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--quiet']);
});

const tsc = path.join(repo, 'node_modules', '.bin', 'tsc');
const typecheck = (dir: string) => spawnSync(tsc, ['--noEmit', '-p', dir], { encoding: 'utf8' });

/** What `npm install` does for the dependencies init wrote: hangar is a `file:` link to this checkout. */
function install(dir: string): void {
  mkdirSync(path.join(dir, 'node_modules', '@types'), { recursive: true });
  symlinkSync(repo, path.join(dir, 'node_modules', 'hangar'));
  symlinkSync(path.join(repo, 'node_modules', '@types', 'node'), path.join(dir, 'node_modules', '@types', 'node'));
}

async function init(): Promise<string> {
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'hangar-init-')), 'my-workspace');
  const r = await cli(['init', dir]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return dir;
}

describe('hangar init', () => {
  it('writes a workspace an editor understands: package.json on hangar, tsconfig over every drop-in folder, .gitignore', async () => {
    const dir = await init();
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: 'my-workspace', private: true, type: 'module', dependencies: { hangar: `file:${repo}` } });
    expect(pkg.devDependencies).toHaveProperty('typescript');
    const tsconfig = JSON.parse(readFileSync(path.join(dir, 'tsconfig.json'), 'utf8'));
    expect(tsconfig.include).toEqual(['agents', 'endpoints', 'plugins', 'ingestors', 'pipelines', 'teams']);
    expect(tsconfig.compilerOptions.strict).toBe(true);
    expect(readFileSync(path.join(dir, '.gitignore'), 'utf8').split('\n')).toContain('.hangar/');
    // The package ships the SDK's declarations under the name the editor resolves.
    const hangarPkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'));
    expect(hangarPkg.exports['.'].types).toBe('./dist/types/core/sdk.d.ts');
    expect(readFileSync(path.join(repo, hangarPkg.exports['.'].types), 'utf8')).toContain('export declare function defineAgent');
  });

  it('tsc --noEmit -p DIR passes on it, and reports a type error planted in an agent', async () => {
    const dir = await init();
    install(dir);
    const clean = typecheck(dir);
    expect(clean.stdout + clean.stderr).toBe('');
    expect(clean.status).toBe(0);

    // A wrong field type against the SDK's own AgentDefinition: proves `hangar` resolved to real types, not `any`.
    const agent = path.join(dir, 'agents', 'hello.ts');
    writeFileSync(agent, readFileSync(agent, 'utf8').replace("version: '1.0.0',", 'version: 1,'));
    const broken = typecheck(dir);
    expect(broken.status).not.toBe(0);
    expect(broken.stdout).toMatch(/agents\/hello\.ts\(6,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
  });

  it('every example loads: one drop-in of each kind, served without a single error', async () => {
    const dir = await init();
    server = await startTestServer({ root: dir });
    const status = await server.request('/api/v1/status');
    expect(status.body.errors).toEqual([]);
    const names = (kind: string) => server!.ctx.registry.list(kind).map((e) => e.name);
    expect([names('agent'), names('endpoint'), names('plugin'), names('ingestor'), names('pipeline'), names('team')]).toEqual([
      ['hello'],
      ['greeting'],
      ['double'],
      ['notes'],
      ['greet'],
      ['app'],
    ]);
    expect((await server.request('/api/v1/hello/invoke', { method: 'POST', json: { query: 'Ada' } })).body.response).toBe('Hello, Ada!');
    expect((await server.request('/api/v1/endpoints/greeting', { method: 'POST', json: { name: 'Ada' } })).body).toMatchObject({
      success: true,
      aggregated: { greeting: 'Hello, Ada!' },
    });
    // A plugin loads its model in the worker pool, which starts on first use: ready shortly after discovery.
    await eventually(async () => (await server!.request('/api/v1/plugins/double')).body.status === 'ready');
    expect((await server.request('/api/v1/plugins/double/predict', { method: 'POST', json: { input: { x: 21 } } })).body).toMatchObject({
      output: { y: 42 },
    });
    expect((await server.request('/api/notebooks')).body.notebooks.map((n: { id: string }) => n.id)).toEqual(['first.nb.ts']);
  });

  it('type errors in its drop-ins are warnings in the terminal, /health and /api/v1/status, and the drop-in still serves', async () => {
    const dir = await init();
    install(dir);
    const agent = path.join(dir, 'agents', 'hello.ts');
    const original = readFileSync(agent, 'utf8');
    // Wrong only for the checker: at run time it is a string in a variable nobody reads.
    writeFileSync(agent, original.replace("ctx.step('greet');", "ctx.step('greet');\n    const count: number = 'one';"));
    server = await startTestServer({ root: dir });
    const warnings = await eventually(async () => {
      const health = await server!.request('/health');
      return health.body.warnings.length > 0 && health.body;
    }, 60_000);
    expect(warnings.errors).toEqual([]);
    expect(warnings.status).toBe('healthy');
    expect(warnings.warnings).toEqual([
      { kind: 'type', file: 'agents/hello.ts', line: 9, column: 11, error: "TS2322: Type 'string' is not assignable to type 'number'." },
    ]);
    expect((await server.request('/api/v1/status')).body.type_errors).toMatchObject([{ file: 'agents/hello.ts', line: 9 }]);
    expect(server.logs.some((l) => / warn {2}type error in agents\/hello\.ts:9:11: TS2322: .+ \(the drop-in still loads\)$/.test(l))).toBe(
      true,
    );
    // It loaded regardless: esbuild strips types, as in Vite.
    expect((await server.request('/api/v1/hello/invoke', { method: 'POST', json: { query: 'Ada' } })).body.response).toBe('Hello, Ada!');

    await server.write('agents/hello.ts', original);
    await eventually(async () => (await server!.request('/health')).body.warnings.length === 0, 60_000);
  });

  it('refuses a folder that is not empty, with one hangar: line (exit 1), writing nothing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hangar-init-'));
    writeFileSync(path.join(dir, 'notes.txt'), 'mine');
    const r = await cli(['init'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`hangar: ${dir} is not empty (notes.txt) (choose a new or empty folder: hangar init my-workspace)`);
    expect(() => readFileSync(path.join(dir, 'package.json'))).toThrow();
  });
});
