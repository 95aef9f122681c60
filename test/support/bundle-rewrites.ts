/**
 * Bundles npm packages as dist/cli.cjs bundles them, with the rewrites of `files` applied
 * (scripts/package-rewrites.mjs) or none, into a CommonJS file in `dir`; returns its path.
 */
import path from 'node:path';
import * as esbuild from 'esbuild';
// @ts-expect-error: a build script in JavaScript, without declarations
import { packageRewritesOf, REWRITE_HELPERS } from '../../scripts/package-rewrites.mjs';
import { repo } from './cli.js';

export async function bundleWithRewrites(dir: string, contents: string, files: string[] | undefined): Promise<string> {
  const bundle = path.join(dir, 'bundle.cjs');
  await esbuild.build({
    stdin: { contents, resolveDir: repo, loader: 'js' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile: bundle,
    logLevel: 'silent',
    plugins: files ? [packageRewritesOf(files)] : [],
    banner: { js: files ? REWRITE_HELPERS : '' },
  });
  return bundle;
}
