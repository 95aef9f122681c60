/**
 * Lines of bundled packages that dist/cli.cjs changes, so a start loads less. Each rewrite names a
 * package file and the exact text it replaces; the build fails when the text is not there (a new
 * version of the package), so a rewrite never silently stops applying.
 *
 * Built-ins a package requires as it loads but a start never uses become lazy: the module is
 * loaded by the first property read (`https.createServer`, `tls.connect`, `zlib.createDeflateRaw`),
 * which is how each of these packages uses it. A start loaded node:http2, node:https, node:tls and
 * node:zlib for Fastify's HTTPS and HTTP/2 servers and ws's client and compression: ~9 ms of every
 * start on this machine (each measured alone in a fresh process after node:http, medians of 3:
 * http2 3.9, zlib 4.0, tls 1.4, https 0.3). `test/kernel/start-loads.test.ts` checks that a start
 * loads none of them.
 *
 * Packages a start loads but only calls on rare paths are loaded by that first call instead: semver
 * in Fastify's plugin checks (used only for plugins that declare a Fastify version; none of
 * Hangar's does), and depd in express, its router and http-errors, which they load for an express
 * router drop-in. depd looks up its caller's file as it is made, from a stack trace: the first
 * stack trace with positions in dist/cli.cjs makes V8 find the line ends of its 4 MB (~2.5 ms), so
 * the four deprecation helpers made as these modules load were ~5 ms of the example workspace's
 * start (its notes-router drop-in); they are made by their first deprecation warning.
 *
 * piscina is bundled too (loading its 15 files from node_modules was ~10 ms of a start): its pool
 * starts each thread on its own `worker.js`, which it finds beside itself; bundled, that is the
 * copy in node_modules, found the way `require` finds the package.
 *
 * find-my-way (Fastify's router) compiles a matcher for every static segment of the route tree
 * with `new Function`, again at every split of a segment as routes are added: ~1,000 compilations
 * and ~10 ms of a start's route registration (CPU profile), for routes most starts never call. A
 * node's matcher is compiled by its first lookup instead, then replaces itself on the node, so
 * lookups after the first run the compiled matcher as before.
 *
 * It also compiled two functions for every route it took: the builder of the route's params
 * object, and the matcher of its node's constraints (host, version), which a lookup only calls
 * when a route has constraints (none of Hangar's has). The params builders are made once per list
 * of parameter names (most routes share `['agent']` or none), and a node's constraint matcher by
 * its first call, as the prefix matchers: ~300 `new Function`s fewer at start, ~13 % of route
 * registration in a CPU profile of it.
 */
import { readFileSync } from 'node:fs';

/** `require(id)` replaced: `__hangarLazyBuiltin(id)`, defined in REWRITE_HELPERS. */
const lazy = (...ids) => ids.map((id) => [`require('${id}')`, `__hangarLazyBuiltin('${id}')`]);
/** `require('depd')(namespace)` replaced: the deprecation helper is made by its first call. */
const lazyDeprecation = (namespace) => [[`require('depd')('${namespace}')`, `__hangarLazyCall(() => require('depd')('${namespace}'))`]];

export const PACKAGE_REWRITES = {
  'fastify/lib/server.js': lazy('node:https', 'node:http2'),
  'fastify/lib/plugin-utils.js': [["require('semver')", "__hangarLazy(() => require('semver'))"]],
  'express/lib/response.js': lazyDeprecation('express'),
  'router/lib/layer.js': lazyDeprecation('router'),
  'router/lib/param.js': lazyDeprecation('router'),
  'http-errors/index.js': lazyDeprecation('http-errors'),
  'ws/lib/websocket.js': lazy('https', 'tls'),
  'ws/lib/permessage-deflate.js': lazy('zlib'),
  'piscina/dist/index.js': [["(0, node_path_1.resolve)(__dirname, 'worker.js')", "__hangarPackageFile('piscina', 'worker.js')"]],
  'find-my-way/lib/node.js': [
    ['compilePrefixMatch(prefix) : null', '__hangarMatchOnFirstUse(this, compilePrefixMatch) : null'],
    ['this.matchPrefix = compilePrefixMatch(childPrefix)', 'this.matchPrefix = __hangarMatchOnFirstUse(this, compilePrefixMatch)'],
  ],
  'find-my-way/lib/handler-storage.js': [
    ['_createParamsObject: this._compileCreateParamsObject(params)', '_createParamsObject: __hangarParamsObjectFor(this, params)'],
    ['this._compileGetHandlerMatchingConstraints(constrainer, constraints)', '__hangarConstraintsOnFirstUse(this, constrainer)'],
  ],
};

/** The helpers the rewritten lines call, put at the top of the bundle (inside its CommonJS wrapper). */
export const REWRITE_HELPERS = [
  'const __hangarLazy = (load) => { let loaded; return new Proxy({}, { get: (_, key) => (loaded ??= load())[key] }); };',
  'const __hangarLazyBuiltin = (id) => __hangarLazy(() => require(id));',
  'const __hangarLazyCall = (make) => { let made; return (...args) => (made ??= make())(...args); };',
  'const __hangarMatchOnFirstUse = (node, compile) => function matchPrefixOnFirstUse(path, i) { node.matchPrefix = compile(node.prefix); return node.matchPrefix(path, i); };',
  // The builder reads nothing but the names, so routes with the same names share one.
  'const __hangarParamsObjects = new Map(); const __hangarParamsObjectFor = (storage, params) => { const key = JSON.stringify(params); let build = __hangarParamsObjects.get(key); if (!build) __hangarParamsObjects.set(key, (build = storage._compileCreateParamsObject(params))); return build; };',
  // Compiled from the node's handlers when first called, which is after the last route is added.
  'const __hangarConstraintsOnFirstUse = (storage, constrainer) => { storage._getHandlerMatchingConstraints = function matchConstraintsOnFirstUse(derived) { storage._compileGetHandlerMatchingConstraints(constrainer); return storage._getHandlerMatchingConstraints(derived); }; };',
  // Resolved once per package: piscina asks for its worker file at every thread it starts.
  "const __hangarPackageDirs = new Map(); const __hangarPackageFile = (name, file) => { let dir = __hangarPackageDirs.get(name); if (dir === undefined) __hangarPackageDirs.set(name, (dir = require('node:path').dirname(require.resolve(name)))); return require('node:path').join(dir, file); };",
].join('\n');

/**
 * The esbuild plugin applying the rewrites of `files` (a test bundles one package with its own);
 * every one of them must be in the bundle (checked when the build ends).
 */
export const packageRewritesOf = (files) => ({
  name: 'package-rewrites',
  setup(build) {
    const rewritten = new Set();
    build.onEnd((result) => {
      const missing = result.errors.length === 0 ? files.filter((file) => !rewritten.has(file)) : [];
      if (missing.length > 0)
        throw new Error(`scripts/package-rewrites.mjs: ${missing.join(', ')} not in the bundle any more; update or drop the rewrite`);
    });
    const filter = new RegExp(
      `node_modules[\\\\/](${files.map((file) => file.replace(/[.]/g, '\\.').replace(/\//g, '[\\\\/]')).join('|')})$`,
    );
    build.onLoad({ filter }, (args) => {
      const file = files.find((name) => args.path.replaceAll('\\', '/').endsWith(`node_modules/${name}`));
      let contents = readFileSync(args.path, 'utf8');
      for (const [from, to] of PACKAGE_REWRITES[file]) {
        if (!contents.includes(from))
          throw new Error(`scripts/package-rewrites.mjs: ${file} no longer contains ${from}; update or drop the rewrite`);
        contents = contents.replaceAll(from, to);
      }
      rewritten.add(file);
      return { contents, loader: 'js' };
    });
  },
});

/** Every rewrite, as dist/cli.cjs is built. */
export const packageRewrites = packageRewritesOf(Object.keys(PACKAGE_REWRITES));
