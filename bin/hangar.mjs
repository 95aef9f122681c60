#!/usr/bin/env node
// Entry of the `hangar` command: runs the bundled CLI, building it first when it is missing or
// older than the sources (a fresh clone right after `npm install`).
import { spawnSync } from 'node:child_process';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// V8's code cache on disk (Node 22.1+): later starts skip compiling Hangar's bundle and what it
// loads from node_modules, which a CPU profile of a cold start showed as its largest share after
// esbuild. Enabled first, so the version check's own modules are cached too (imported below, not
// statically: a static import would run before this line).
module.enableCompileCache?.();
const { unsupportedNodeMessage } = await import('./node-version.mjs');

const unsupported = unsupportedNodeMessage(process.versions.node);
if (unsupported) {
  process.stderr.write(`${unsupported}\n`);
  process.exit(1);
}
const { distIsStale } = await import('../scripts/stale.mjs');

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Checked here rather than by spawning the build script every time: a node process costs ~70 ms.
if (distIsStale(repo)) {
  const built = spawnSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--quiet'], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const { loadCli } = await import('./load-cli.mjs');
const { main } = loadCli(repo);
process.exit(await main(process.argv.slice(2)));
