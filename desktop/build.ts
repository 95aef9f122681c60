import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Esbuild from 'esbuild';
import { esbuild } from '../core/lib/esbuild.js';

/**
 * Builds the two halves of the desktop app with esbuild:
 * - the views (`desktop/views/`) into an in-memory bundle the `ui` subsystem serves at /ui/;
 * - the Electron shell (main + preload) into `dist/desktop/` for `electron` to load.
 */

/** The repository folder, from this file in desktop/ or from a bundle in dist/. */
export function repositoryRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  if (path.basename(here) === 'dist') return path.dirname(here);
  if (path.basename(here) === 'desktop' && path.basename(path.dirname(here)) === 'dist') return path.resolve(here, '..', '..');
  return path.resolve(here, '..');
}

export interface Asset {
  body: Buffer;
  type: string;
}

/** How browser code is bundled: one ES module per entry, everything inlined, nothing loaded from elsewhere. */
const BROWSER_BUNDLE = {
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'browser',
  // The Electron and Debian Chromium of today; nothing older is targeted.
  target: ['chrome110', 'firefox115', 'safari16'],
  minify: true,
  legalComments: 'none',
  logLevel: 'silent',
} satisfies Esbuild.BuildOptions;

/**
 * Every file of the UI by its path under /ui/: `index.html`, `app.js`, `app.css` and their source
 * maps (linked, not inline: an inline map would triple what every page load parses), and
 * `output-frame.html`, the sandboxed frame notebook outputs with scripts run in.
 */
export async function buildViews(root = repositoryRoot()): Promise<Map<string, Asset>> {
  const views = path.join(root, 'desktop', 'views');
  const result = await esbuild().build({
    ...BROWSER_BUNDLE,
    entryPoints: [
      { in: path.join(views, 'main.ts'), out: 'app' },
      { in: path.join(views, 'styles.css'), out: 'app' },
    ],
    outdir: '/ui',
    sourcemap: 'linked',
  });
  const types: Record<string, string> = {
    '.js': 'text/javascript; charset=utf-8',
    '.css': 'text/css; charset=utf-8',
    '.map': 'application/json; charset=utf-8',
  };
  const assets = new Map<string, Asset>();
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    assets.set(name, { body: Buffer.from(file.contents), type: types[path.extname(name)]! });
  }
  assets.set('index.html', { body: await readFile(path.join(views, 'index.html')), type: 'text/html; charset=utf-8' });
  assets.set('output-frame.html', { body: await readFile(path.join(views, 'output-frame.html')), type: 'text/html; charset=utf-8' });
  return assets;
}

/**
 * The notebook cell editor (`desktop/views/notebook/editor.ts`, CodeMirror 6) alone, as an ES
 * module whose exports are the module's own (`mountCodeEditor`): the `notebook start` / `dev` page
 * is plain DOM and loads it, so that page and the UI's notebook view edit cells with one component.
 * No source map: the page is served by the notebook CLI's servers, which serve this one file.
 */
export async function buildCellEditor(root = repositoryRoot()): Promise<Asset> {
  const result = await esbuild().build({
    ...BROWSER_BUNDLE,
    entryPoints: [path.join(root, 'desktop', 'views', 'notebook', 'editor.ts')],
    outfile: '/notebook/cell-editor.js',
  });
  return { body: Buffer.from(result.outputFiles[0]!.contents), type: 'text/javascript; charset=utf-8' };
}

/** Bundles the Electron main process (ESM) and the sandboxed preload (CommonJS) into `outdir`. */
export async function buildShell(
  root = repositoryRoot(),
  outdir = path.join(root, 'dist', 'desktop'),
): Promise<{ main: string; preload: string }> {
  const common: Esbuild.BuildOptions = {
    bundle: true,
    platform: 'node',
    target: 'node22',
    logLevel: 'warning',
    sourcemap: 'linked',
    external: ['electron'],
  };
  const main = path.join(outdir, 'main.mjs');
  const preload = path.join(outdir, 'preload.cjs');
  await Promise.all([
    esbuild().build({
      ...common,
      entryPoints: [path.join(root, 'desktop', 'main.ts')],
      outfile: main,
      format: 'esm',
      packages: 'external',
    }),
    // The preload runs in the sandbox, where only `electron` can be required: everything else is inlined.
    esbuild().build({ ...common, entryPoints: [path.join(root, 'desktop', 'preload.ts')], outfile: preload, format: 'cjs' }),
  ]);
  return { main, preload };
}
