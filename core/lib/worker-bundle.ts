/**
 * Worker-thread entry points are TypeScript, which worker threads cannot load as they are, so each is
 * bundled by esbuild on first use into `node_modules/.cache/hangar-workers/<name>.<hash>.cjs` —
 * inside the package, so the worker's bare imports (zod, arquero, …) resolve to Hangar's own
 * dependencies. The hash is of the bundle itself, so any change to the worker or a module it
 * imports gives a new file, and a stale one is never loaded. Beside it, `<name>.<format>.inputs.json`
 * records the files the bundle was built from (size and modification time): a later process whose
 * inputs are unchanged uses the bundle without running esbuild, which would block its main thread.
 *
 * Always CommonJS: piscina loads a worker with `require()` first, and on Node 20.19+ `require()` of
 * an ES module can abort the whole process with a V8 fatal error ("IsGraphAsync must be used on an
 * instantiated module") when workers start together — measured 2 aborted server starts in 25 with
 * `.mjs` workers; a crash no try/catch sees. A `.cjs` file never takes that path. Dynamic `import()`
 * inside a worker (notebook cells importing ES modules) still works from CommonJS.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions, Metafile } from 'esbuild';
import { esbuild } from './esbuild.js';
import { type InputStamp, inputsUnchanged, stampInputs } from './input-stamps.js';

const here = dirname(fileURLToPath(import.meta.url));
const built = new Map<string, string>();

/**
 * The repository (package) root: the nearest folder above this module with `core/` and a
 * package.json. From source this module is core/lib/; bundled it is dist/ or a build folder.
 */
export function packageRoot(): string {
  for (let dir = here; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'core'))) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the Hangar package above ${here}`);
  }
}

/**
 * Path of a runnable bundle of `entry` (relative to the package root, e.g. 'core/predictors/worker.ts'),
 * building it once per process. Concurrent processes never see half a file: the bundle is written
 * to a temporary name and renamed.
 *
 * `format: 'esm'` is only for modules loaded with `import()` inside a worker (never `require()`d
 * by piscina), e.g. the notebook's analysis functions, whose dependencies include ES-only packages.
 *
 * This builds synchronously when it must (esbuild's buildSync blocks the calling thread for the
 * build); a caller on the server's thread that can wait uses workerBundleAsync instead.
 */
export function workerBundle(entry: string, { format = 'cjs' }: { format?: 'cjs' | 'esm' } = {}): string {
  const target = targetOf(entry, format);
  return reuse(target) ?? store(target, esbuild().buildSync(buildOptions(target)));
}

/**
 * The bundle of `entry` when it needs no build (this process built it, or a previous one did from
 * unchanged inputs), else undefined: for a caller that must not wait, even a turn of the event loop.
 */
export function reusableWorkerBundle(entry: string, { format = 'cjs' }: { format?: 'cjs' | 'esm' } = {}): string | undefined {
  return reuse(targetOf(entry, format));
}

const building = new Map<string, Promise<string>>();

/**
 * workerBundle, with the build run by esbuild's service process while this thread goes on serving
 * (a build takes a few hundred ms on a loaded machine: too long to hold requests for). Concurrent
 * callers share one build.
 */
export function workerBundleAsync(entry: string, { format = 'cjs' }: { format?: 'cjs' | 'esm' } = {}): Promise<string> {
  const target = targetOf(entry, format);
  const known = reuse(target);
  if (known) return Promise.resolve(known);
  let pending = building.get(target.key);
  if (!pending) {
    pending = esbuild()
      .build(buildOptions(target))
      .then((result) => store(target, result))
      .finally(() => building.delete(target.key));
    building.set(target.key, pending);
  }
  return pending;
}

interface Target {
  key: string;
  root: string;
  entry: string;
  name: string;
  format: 'cjs' | 'esm';
  ext: string;
  cache: string;
  manifest: string;
}

function targetOf(entry: string, format: 'cjs' | 'esm'): Target {
  const root = packageRoot();
  const name = entry
    .replace(/^core\//, '')
    .replace(/\.ts$/, '')
    .replace(/[/\\]/g, '-');
  const ext = format === 'cjs' ? 'cjs' : 'mjs';
  const cache = join(root, 'node_modules', '.cache', 'hangar-workers');
  // One manifest per source tree: a copy of the sources that shares this node_modules (a mutation
  // testing sandbox links it) must not make this tree reuse a bundle built from the copy's files.
  const tree = createHash('sha256').update(root).digest('hex').slice(0, 8);
  const manifest = join(cache, `${name}.${ext}.${tree}.inputs.json`);
  return { key: `${entry}:${format}`, root, entry, name, format, ext, cache, manifest };
}

/**
 * The bundle this process built already, or one a previous process built from unchanged inputs;
 * either only while its file is still there. Another process building a newer bundle of the same
 * worker deletes the ones untouched for an hour (store), which includes the one a server started
 * from hours ago: returning that path would start a thread from a file that is gone.
 */
function reuse(target: Target): string | undefined {
  const cachedPath = built.get(target.key);
  if (cachedPath && existsSync(cachedPath)) return cachedPath;
  const previous = readManifest(target.manifest);
  if (previous && existsSync(previous.bundle) && inputsUnchanged(previous.inputs)) {
    touch(previous.bundle);
    built.set(target.key, previous.bundle);
    return previous.bundle;
  }
  return undefined;
}

/**
 * Mark a bundle as in use by the process that takes it up without writing it (from the manifest,
 * or built again to the same bytes as a file already there). The pruning in store goes by
 * modification time, which is otherwise when the bundle was built, maybe days ago: a server
 * starting now from such a bundle (its threads start lazily, on the first task) could have it
 * deleted by a test run a minute later. Touched, it has the hour's protection of a bundle just
 * built. Once per bundle per process, not on every reuse (one syscall at take-up): a long-running
 * process is not kept safe by this anyway (its hour passes), only by building again when the file
 * is gone (reuse, and WorkerPool). A bundle that cannot be touched (a read-only installation,
 * where nothing prunes it either) is used as it is.
 */
function touch(file: string): void {
  try {
    const now = new Date();
    utimesSync(file, now, now);
  } catch {
    // read-only, or deleted meanwhile (a WorkerPool finds it gone before starting a thread, and builds it again)
  }
}

/**
 * npm packages bundled into every worker rather than required from node_modules: zod, which every
 * worker loads at start (the SDK re-exports it). From node_modules it is ~60 files, each resolved,
 * read and wrapped by Node's module loader in every new thread (~15 ms of CPU per thread on this
 * machine, more under load); bundled it is part of the worker's one file, which V8's code cache
 * keeps compiled. Every other package stays external: some find files beside their own code
 * (piscina's worker, esbuild's binary), and the rest are loaded only by the calls that need them.
 * A worker's zod is its own either way (a thread cannot share the server's), so bundling it changes
 * no schema's identity.
 */
const BUNDLED_PACKAGES = ['zod'];

/**
 * esbuild's `packages: 'external'`, except for BUNDLED_PACKAGES: every package the root's
 * package.json names (and its subpaths) is external, the rest bundled. A list rather than an
 * onResolve plugin because esbuild refuses plugins in buildSync, which workerBundle needs.
 */
function externalPackages(root: string): string[] {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
  const names = new Set(
    ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'].flatMap((field) => Object.keys(manifest[field] ?? {})),
  );
  for (const name of BUNDLED_PACKAGES) names.delete(name);
  return [...names].flatMap((name) => [name, `${name}/*`]);
}

function buildOptions(target: Target) {
  return {
    entryPoints: [join(target.root, target.entry)],
    absWorkingDir: target.root,
    bundle: true,
    platform: 'node',
    format: target.format,
    target: 'node22',
    external: externalPackages(target.root),
    write: false,
    outfile: `worker.${target.ext}`,
    metafile: true,
    logLevel: 'silent',
  } satisfies BuildOptions;
}

/** Write the built bundle under its content hash (if new) and its inputs manifest; returns its path. */
function store(target: Target, result: { outputFiles: { text: string }[]; metafile: Metafile }): string {
  const { root, name, ext, cache } = target;
  const code = result.outputFiles[0]!.text;
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 12);
  const file = join(cache, `${name}.${hash}.${ext}`);
  if (!existsSync(file)) {
    mkdirSync(cache, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, code);
    renameSync(tmp, file);
    // Older bundles of this worker are left by edits. Only ones untouched for an hour go: another
    // process built from other sources (a test run during an edit) may be about to start a worker
    // from its bundle right now. A process that has run longer may still need one that goes; it
    // builds it again when it finds the file gone (reuse, and WorkerPool before a thread starts).
    const stale = Date.now() - 60 * 60 * 1000;
    for (const old of readdirSync(cache)) {
      if (!old.startsWith(`${name}.`) || !old.endsWith(`.${ext}`) || old === `${name}.${hash}.${ext}`) continue;
      const oldFile = join(cache, old);
      if ((statSync(oldFile, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) < stale) rmSync(oldFile, { force: true });
    }
  } else {
    // The same bundle, written by an earlier build: this process takes it up now.
    touch(file);
  }
  writeManifest(target.manifest, {
    bundle: file,
    inputs: stampInputs(Object.keys(result.metafile.inputs).map((input) => resolve(root, input))),
  });
  built.set(target.key, file);
  return file;
}

interface WorkerManifest {
  bundle: string;
  inputs: InputStamp[];
}

function readManifest(file: string): WorkerManifest | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as WorkerManifest;
  } catch {
    return undefined;
  }
}

/** Written aside and renamed; a manifest that cannot be written only costs the next process a build. */
function writeManifest(file: string, manifest: WorkerManifest): void {
  try {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(manifest));
    renameSync(tmp, file);
  } catch {
    // a read-only installation: build again next time
  }
}
