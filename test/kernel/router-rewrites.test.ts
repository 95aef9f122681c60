/**
 * dist/cli.cjs bundles find-my-way (Fastify's router) with lines rewritten so a start compiles less
 * (scripts/package-rewrites.mjs): a route's params builder shared by routes with the same parameter
 * names, a node's constraint matcher compiled by its first call. The router bundled that way must
 * route as before, and compile a handful of functions where it compiled two for every route.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a build script in JavaScript, without declarations
import { PACKAGE_REWRITES } from '../../scripts/package-rewrites.mjs';
import { bundleWithRewrites } from '../support/bundle-rewrites.js';

/** Runs `script` against find-my-way bundled with its rewrites (or without), counting `new Function`s. */
async function withBundledRouter(script: string, rewritten: boolean): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hangar-router-'));
  const files = Object.keys(PACKAGE_REWRITES).filter((file) => file.startsWith('find-my-way/'));
  const bundle = await bundleWithRewrites(dir, "module.exports = require('find-my-way');", rewritten ? files : undefined);
  const runner = path.join(dir, 'run.cjs');
  writeFileSync(
    runner,
    `let compiled = 0;
globalThis.Function = new Proxy(Function, { construct(target, args) { compiled++; return Reflect.construct(target, args); } });
const FindMyWay = require(${JSON.stringify(bundle)});
const out = {};
${script}
out.compiled = compiled;
process.stdout.write(JSON.stringify(out));`,
  );
  const run = spawnSync(process.execPath, [runner], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout);
}

const ROUTES = `
const router = FindMyWay();
const named = (name) => Object.assign(() => name, { routeName: name });
for (let i = 0; i < 50; i++) router.on('GET', '/api/r' + i + '/:agent', named('r' + i));
router.on('GET', '/api/t/:agent/threads/:thread_id', named('thread'));
router.on('GET', '/api/h', { constraints: { host: 'a.example' } }, named('host a'));
router.on('GET', '/api/h', named('any host'));
const found = (path, constraints) => { const f = router.find('GET', path, constraints); return f && { name: f.handler.routeName, params: { ...f.params } }; };
out.registeredCompiled = compiled;
out.r7 = found('/api/r7/echo');
out.r42 = found('/api/r42/other');
out.thread = found('/api/t/echo/threads/t-1');
out.hostA = found('/api/h', { host: 'a.example' });
out.hostB = found('/api/h', { host: 'b.example' });
out.none = found('/api/nothing');
`;

describe("the bundled router's rewrites", () => {
  it('route, params and host constraints as find-my-way does, compiling per parameter list rather than per route', async () => {
    const [before, after] = await Promise.all([withBundledRouter(ROUTES, false), withBundledRouter(ROUTES, true)]);
    const answers = ({ compiled, registeredCompiled, ...rest }: Record<string, unknown>) => rest;
    expect(answers(after)).toEqual(answers(before));
    expect(after).toMatchObject({
      r7: { name: 'r7', params: { agent: 'echo' } },
      r42: { name: 'r42', params: { agent: 'other' } },
      thread: { name: 'thread', params: { agent: 'echo', thread_id: 't-1' } },
      hostA: { name: 'host a' },
      hostB: { name: 'any host' },
      none: null,
    });
    // Unrewritten: a params builder and a constraint matcher for each of the 53 routes.
    expect(before.registeredCompiled).toBeGreaterThanOrEqual(106);
    // Rewritten: one builder per parameter list (three), and the constrainer's own deriver, rebuilt
    // when a route first uses the host constraint; no node's matcher until a lookup needs it.
    expect(after.registeredCompiled).toBe(4);
  });
});
