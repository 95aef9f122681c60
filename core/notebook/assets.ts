/**
 * Where the notebook subsystem's files are at run time. Source runs (vitest, tsx) load modules
 * from `core/notebook/`; `scripts/build.mjs` bundles them into `dist/`, and a Docker export puts a
 * bundle next to copies of the files it needs. `import.meta.url` points somewhere different in each
 * case, so the folder holding the schema (and the worker source) is searched for instead of assumed.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
let assets: string | undefined;
let root: string | undefined;

/** The folder with `nbformat.v4.schema.json` (and, in source checkouts, the TypeScript sources). */
export function assetDir(): string {
  if (assets) return assets;
  const candidates = [here, join(here, '..', 'core', 'notebook'), join(here, '..', '..', 'core', 'notebook')];
  const found = candidates.find((dir) => existsSync(join(dir, 'nbformat.v4.schema.json')));
  if (!found) throw new Error(`notebook assets not found (looked in ${candidates.join(', ')})`);
  return (assets = found);
}

/** The nearest folder at or above the assets with a package.json: where node_modules lives. */
export function packageRoot(): string {
  if (root) return root;
  let dir = assetDir();
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return (root = dir);
}

/** The folder this module was loaded from (a bundle's own folder when bundled). */
export const moduleDir = here;
