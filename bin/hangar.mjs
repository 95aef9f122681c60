#!/usr/bin/env node
// Entry of the `hangar` command: runs the bundled CLI, building it first when it is missing or
// older than the sources (a fresh clone right after `npm install`).
//
// What runs before the CLI is CommonJS, loaded with require(): importing Node's built-ins and these
// helpers as ES modules (a namespace made for every built-in, the loader's asynchronous steps for
// each helper) cost every start ~10 ms before the bundle could load (medians of alternating starts).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// V8's code cache on disk (Node 22.1+): later starts skip compiling Hangar's bundle and what it
// loads from node_modules, which a CPU profile of a cold start showed as its largest share after
// esbuild. Enabled first, so the version check's own modules are cached too.
require('node:module').enableCompileCache?.();
const { unsupportedNodeMessage } = require('./node-version.cjs');

const unsupported = unsupportedNodeMessage(process.versions.node);
if (unsupported) {
  process.stderr.write(`${unsupported}\n`);
  process.exit(1);
}
const path = require('node:path');
const { distIsStale } = require('../scripts/stale.cjs');

const repo = path.resolve(import.meta.dirname, '..');
// Checked here rather than by spawning the build script every time: a node process costs ~70 ms.
if (distIsStale(repo)) {
  const built = require('node:child_process').spawnSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--quiet'], {
    stdio: 'inherit',
  });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const { loadCli } = require('./load-cli.cjs');
const { main } = loadCli(repo);
process.exit(await main(process.argv.slice(2)));
