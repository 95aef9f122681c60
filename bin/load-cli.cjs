/**
 * Loads the bundled CLI (dist/cli.cjs) through V8's code cache, made once a start is ready and
 * has answered its first request.
 *
 * Node's own compile cache (`module.enableCompileCache`, which bin/hangar.mjs also turns on for
 * everything else) is made right after a module is compiled, so it holds only the code that runs
 * while the module loads: every function a start calls later was compiled again at every start,
 * a fifth of a start's CPU. A cache made after the server answered a request holds those functions
 * too (what `v8-compile-cache` did for CommonJS, and Chrome does for scripts it has run), and the
 * request path with them: made at ready, it lacked what answering runs (Fastify's request
 * handling, the guards, the reply), which every start's first request compiled again — the first
 * `/readiness` took a median 8.4 ms, 4.2 ms with them cached (5 starts each, session 25).
 *
 * The cache is written when there was none for this build, or V8 rejected it (another Node); V8
 * checks a cache against the source's length, its own version and its flags, not the content, so
 * the file is named after the build (size and time of dist/cli.cjs) and the Node that made it, and
 * older ones are removed. A read-only installation just starts without it.
 */
const { isAscii } = require('node:buffer');
const { subscribe, unsubscribe } = require('node:diagnostics_channel');
const {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} = require('node:fs');
const { createRequire } = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

/** Published by the server once it is ready (core/app/server.ts). */
const READY_CHANNEL = 'hangar:ready';
/** Published by node:http as a server finishes a response. */
const RESPONSE_CHANNEL = 'http.server.response.finish';
/** A server nobody calls makes its cache this long after it is ready. */
const CACHE_WITHOUT_REQUEST_MS = 500;

/**
 * The CommonJS wrapper the bundle is compiled in. The build writes dist/cli.cjs already inside it
 * (scripts/build.mjs), so the source read from the file is compiled as it is: wrapped here, it was a
 * second 4 MB string V8 had to flatten into a third, ~12 ms of every start (compiling with the code
 * cache, 49 → 37 ms). The build wraps only a file it has made ASCII only, so a file starting with
 * the wrapper is read as Latin-1 without scanning its 4 MB for other bytes (~5 ms).
 */
const CLI_WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {';
const CLI_WRAPPER_TAIL = '\n})';

/**
 * Where the cache of this build for this Node is: under `NODE_COMPILE_CACHE`, Node's own variable
 * for where compile caches go, when it is set (tests give each run its own), else in
 * node_modules/.cache/hangar-cli, beside the worker bundles' cache.
 */
function cacheFileOf(repo) {
  const { size, mtimeMs } = statSync(path.join(repo, 'dist', 'cli.cjs'));
  const under = process.env.NODE_COMPILE_CACHE || path.join(repo, 'node_modules', '.cache');
  const cacheDir = path.join(under, 'hangar-cli');
  return { cacheDir, cacheFile: path.join(cacheDir, `${process.version}-${process.arch}-${size}-${Math.round(mtimeMs)}.bin`) };
}

function loadCli(repo) {
  // ws tries to require its optional native helper (bufferutil) as it loads: not installed with
  // Hangar, so each start paid ~3.5 ms for a failing lookup through node_modules. ws's own switch
  // skips it; a user who installs bufferutil and wants it sets WS_NO_BUFFER_UTIL= (empty).
  process.env.WS_NO_BUFFER_UTIL ??= '1';
  const file = path.join(repo, 'dist', 'cli.cjs');
  // The build writes it ASCII only (scripts/build.mjs, asciiOnly): read as Latin-1 it is a one-byte
  // string made in a copy, where UTF-8 decoding took ~55 ms of a start. An older build decodes as UTF-8.
  const bytes = readInto(file);
  const wrapped = bytes.subarray(0, CLI_WRAPPER_HEAD.length).toString('latin1') === CLI_WRAPPER_HEAD;
  // A build from before the wrapper (or the ASCII escape) is wrapped here, and decoded as UTF-8 when it must be.
  const source = wrapped
    ? bytes.toString('latin1')
    : `${CLI_WRAPPER_HEAD}${bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8')}${CLI_WRAPPER_TAIL}`;
  const { cacheDir, cacheFile } = cacheFileOf(repo);
  let cachedData;
  try {
    // Into the bundle's bytes, copied into `source` and not needed any more: no new memory.
    cachedData = readInto(cacheFile, bytes);
  } catch {
    // None yet for this build.
  }
  const script = new vm.Script(source, {
    filename: file,
    cachedData,
    // `import()` of the packages left in node_modules (openai, the MCP SDK) as from any module.
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const cli = { exports: {} };
  script.runInThisContext()(cli.exports, createRequire(file), cli, file, path.dirname(file));
  if (!cachedData || script.cachedDataRejected) whenWarm(() => save(script, cacheDir, cacheFile));
  return cli.exports;
}

/**
 * Calls `make` once, when the code a start runs has been compiled: after the first response that
 * follows ready (a response before it, a 503 to an early probe, is not the whole start), or
 * CACHE_WITHOUT_REQUEST_MS after ready when no request comes. Then it stops listening, so later
 * responses publish to no one.
 */
function whenWarm(make) {
  let ready = false;
  let timer;
  const done = () => {
    unsubscribe(READY_CHANNEL, onReady);
    unsubscribe(RESPONSE_CHANNEL, onResponse);
    clearTimeout(timer);
    setImmediate(make);
  };
  const onReady = () => {
    ready = true;
    timer = setTimeout(done, CACHE_WITHOUT_REQUEST_MS).unref();
  };
  const onResponse = () => {
    if (ready) done();
  };
  subscribe(READY_CHANNEL, onReady);
  subscribe(RESPONSE_CHANNEL, onResponse);
}

/**
 * `file`'s bytes, read into `reuse` when they fit, else into a new buffer. Memory a process touches
 * for the first time is the dearest thing a start does on this machine: every 4 KB page is a fault
 * (~12 us each here, ~3 ms a megabyte; a second pass over the same pages ~0.05 ms a megabyte), and
 * a start faults ~16,000 times. The code cache (~3 MB) read into the bundle's buffer (~4 MB, dead
 * once its string is made) is ~760 faults fewer than a buffer of its own.
 */
function readInto(file, reuse) {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const target = reuse && reuse.length >= size ? reuse : Buffer.allocUnsafeSlow(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, target, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return target.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

function save(script, cacheDir, cacheFile) {
  try {
    mkdirSync(cacheDir, { recursive: true });
    for (const old of readdirSync(cacheDir)) if (old.endsWith('.bin')) rmSync(path.join(cacheDir, old), { force: true });
    const partial = `${cacheFile}.${process.pid}.tmp`;
    writeFileSync(partial, script.createCachedData());
    renameSync(partial, cacheFile);
  } catch {
    // Not writable: later starts compile as this one did.
  }
}

module.exports = { CLI_WRAPPER_HEAD, CLI_WRAPPER_TAIL, cacheFileOf, loadCli, whenWarm };
