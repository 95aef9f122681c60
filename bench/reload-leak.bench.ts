/**
 * Reloading does not leak (issue 2): 500 reloads of one agent through the real discovery code,
 * heap after a forced GC, against the naive approach — writing the bundle to a file and
 * `import()`ing it with a cache-busting query, which Node never frees.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import * as zod from 'zod';
import { agentKind } from '../core/agents/kind.js';
import { Discovery } from '../core/kernel/discovery.js';
import { Logger } from '../core/kernel/log.js';
import { Registry } from '../core/kernel/registry.js';
import * as sdk from '../core/sdk.js';
import { report, round, workspace } from './lib/measure.js';

const RELOADS = 500;
// A drop-in with some weight, as real ones have: a table and closures that hold it.
const source = (i: number) => `import { defineAgent } from 'hangar';
const table = Array.from({ length: 2000 }, (_, k) => ({ k, label: 'row ' + k + ' of version ${i}' }));
export default defineAgent({ version: '${i}', run: async (input) => table[input.query.length % table.length].label });
`;

const gc = () => {
  for (let i = 0; i < 3; i++) (globalThis as { gc?: () => void }).gc?.();
};
const heapMb = () => {
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
};

async function hangarReloads(): Promise<number> {
  const root = await workspace({ 'agents/leaky.ts': source(0) });
  const registry = new Registry();
  const discovery = new Discovery({ root, registry, log: new Logger('silent'), provided: { hangar: sdk, zod } });
  discovery.register(agentKind);
  await discovery.scan();
  await discovery.watch();
  const before = heapMb();
  for (let i = 1; i <= RELOADS; i++) {
    await writeFile(path.join(root, 'agents/leaky.ts'), source(i));
    while (registry.get<{ version: string }>('agent', 'leaky')?.definition.version !== String(i)) {
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  const after = heapMb();
  await discovery.close();
  return after - before;
}

async function naiveImports(): Promise<number> {
  const root = await workspace({ 'agents/leaky.ts': source(0) });
  const before = heapMb();
  for (let i = 1; i <= RELOADS; i++) {
    await writeFile(
      path.join(root, 'agents/leaky.ts'),
      source(i).replace("from 'hangar'", `from ${JSON.stringify(path.resolve('core/sdk.ts'))}`),
    );
    // Inside the repository so the bundle's bare imports (zod) resolve from node_modules.
    const out = path.resolve('.hangar', 'bench', 'naive-bundle.mjs');
    await esbuild.build({
      entryPoints: [path.join(root, 'agents/leaky.ts')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      outfile: out,
      logLevel: 'silent',
      packages: 'external',
    });
    await import(pathToFileURL(out).href + `?v=${i}`);
  }
  return heapMb() - before;
}

if (!(globalThis as { gc?: unknown }).gc) throw new Error('run with --expose-gc (npm run bench does)');
const ours = await hangarReloads();
const naive = await naiveImports();
report({
  name: `heap growth after ${RELOADS} reloads (forced GC)`,
  value: ours,
  unit: 'MB',
  baseline: { label: 'cache-busting import()', value: naive },
  target: { on: 'value', op: '<', limit: 20, unit: 'MB' },
  detail: `${round(ours)} MB vs cache-busting import() ${round(naive)} MB`,
});
