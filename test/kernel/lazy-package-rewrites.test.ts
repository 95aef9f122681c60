/**
 * dist/cli.cjs bundles semver (in Fastify's plugin checks) and depd (in express, its router and
 * http-errors) so that they are loaded or made by their first use, not as the modules that need
 * them load (scripts/package-rewrites.mjs). Bundled that way, loading those packages takes no
 * stack trace, and a deprecation and a plugin's Fastify version are still checked as before.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a build script in JavaScript, without declarations
import { PACKAGE_REWRITES } from '../../scripts/package-rewrites.mjs';
import { bundleWithRewrites } from '../support/bundle-rewrites.js';

const LAZY_FILES = [
  'fastify/lib/plugin-utils.js',
  'express/lib/response.js',
  'router/lib/layer.js',
  'router/lib/param.js',
  'http-errors/index.js',
];

/** Loads the packages bundled with the rewrites of LAZY_FILES (or without), then uses them. */
async function run(rewritten: boolean): Promise<{ out: Record<string, unknown>; stderr: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hangar-lazy-rewrites-'));
  const bundle = await bundleWithRewrites(
    dir,
    "module.exports = { createError: require('http-errors'), express: require('express'), Fastify: require('fastify') };",
    rewritten ? LAZY_FILES : undefined,
  );
  const runner = path.join(dir, 'run.cjs');
  writeFileSync(
    runner,
    `let stacks = 0;
const capture = Error.captureStackTrace;
Error.captureStackTrace = function (...args) { stacks++; return capture.apply(this, args); };
const { createError, express, Fastify } = require(${JSON.stringify(bundle)});
const out = { stacksAtLoad: stacks };
// An express app with a route parameter: what a router drop-in does.
const app = express();
app.param('id', (_req, _res, next) => next());
app.get('/:id', (_req, res) => res.end());
createError(200, 'not an error status');
const fastify = Fastify();
const plugin = (_instance, _options, done) => done();
plugin[Symbol.for('plugin-meta')] = { name: 'for-fastify-4', fastify: '4.x' };
fastify.register(plugin);
fastify.ready((err) => {
  out.versionCheck = err ? err.code : 'accepted';
  process.stdout.write(JSON.stringify(out));
});`,
  );
  const child = spawnSync(process.execPath, [runner], { encoding: 'utf8' });
  expect(child.status).toBe(0);
  return { out: JSON.parse(child.stdout), stderr: child.stderr };
}

describe('semver and depd bundled to load on first use', () => {
  it('are rewritten in the bundle', () => {
    for (const file of LAZY_FILES) expect(Object.keys(PACKAGE_REWRITES)).toContain(file);
  });

  it('take no stack trace as their packages load, and still warn and check versions', async () => {
    const [before, after] = await Promise.all([run(false), run(true)]);
    // The check can fail: without the rewrites, depd walks the stack as each helper is made.
    expect(before.out.stacksAtLoad).toBeGreaterThan(0);
    expect(after.out.stacksAtLoad).toBe(0);
    for (const { out, stderr } of [before, after]) {
      expect(stderr).toContain('http-errors deprecated non-error status code; use only 4xx or 5xx status codes');
      expect(out.versionCheck).toBe('FST_ERR_PLUGIN_VERSION_MISMATCH');
    }
  }, 60_000);
});
