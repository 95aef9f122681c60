// Bundles the CLI and server into dist/ with esbuild. `--if-stale` skips the build when dist is
// newer than every source file, so `npm start` and `hangar` stay instant after the first run.
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { distIsStale } from './stale.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));

if (args.has('--if-stale') && !distIsStale(repo)) process.exit(0);

const started = Date.now();
const result = await esbuild.build({
  entryPoints: { cli: path.join(repo, 'core', 'kernel', 'cli.ts') },
  outdir: path.join(repo, 'dist'),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  metafile: true,
  // Metafile paths are relative to this; `hangar` may run (and build) from any directory.
  absWorkingDir: repo,
});
// Chunk names carry content hashes: drop the chunks of earlier builds so dist/ does not grow.
const written = new Set(Object.keys(result.metafile.outputs).map((file) => path.resolve(repo, file)));
for (const entry of readdirSync(path.join(repo, 'dist'), { withFileTypes: true })) {
  const full = path.join(repo, 'dist', entry.name);
  if (entry.isFile() && /\.mjs(\.map)?$/.test(entry.name) && !written.has(full)) rmSync(full);
}
if (!args.has('--quiet')) console.log(`built dist/cli.mjs in ${Date.now() - started} ms`);
