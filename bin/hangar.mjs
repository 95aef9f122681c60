#!/usr/bin/env node
// Entry of the `hangar` command: runs the bundled CLI, building it first when it is missing or
// older than the sources (a fresh clone right after `npm install`).
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const built = spawnSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--if-stale', '--quiet'], { stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);
const { main } = await import(pathToFileURL(path.join(repo, 'dist', 'cli.mjs')).href);
process.exit(await main(process.argv.slice(2)));
