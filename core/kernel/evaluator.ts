import { createHash } from 'node:crypto';
import { createRequire, type SourceMapPayload } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import type { BuildFailure, BuildResult } from 'esbuild';
import { esbuild, esbuildVersion } from '../lib/esbuild.js';
import { rememberBundle } from './bundles.js';
import { originalLocation, rememberBuild, virtualName as virtualNameOf, WRAPPER_HEAD } from './stack.js';

/**
 * Turns one drop-in entry into a live module object: esbuild bundles it (TypeScript or
 * JavaScript, relative imports and npm packages included) to CommonJS in memory, and we evaluate
 * the bundle ourselves in a function wrapper — as Vite's module runner does — instead of
 * `import()`ing a file. Node never frees an ES module once imported, so cache-busted `import()`
 * leaks every version; a wrapped function is an ordinary value the GC reclaims when the registry
 * drops it (see bench/reload-leak.mjs).
 *
 * Modules that must be shared with the host (the SDK as `hangar`, and `zod` so schemas are the
 * host's classes) are not bundled but provided; Node built-ins are required normally.
 * Accepted limit: top-level `await` is not available in drop-ins (CommonJS output).
 */

export interface DropInLocation {
  file: string;
  line?: number;
  column?: number;
}

/** A drop-in that could not be built, evaluated or validated — shown in /api/v1/status. */
export class DropInError extends Error {
  readonly file: string;
  readonly line?: number;
  readonly column?: number;

  constructor(message: string, location: DropInLocation) {
    super(message);
    this.name = 'DropInError';
    this.file = location.file;
    this.line = location.line;
    this.column = location.column;
  }

  toJSON(): { file: string; line: number | null; column: number | null; message: string } {
    return { file: this.file, line: this.line ?? null, column: this.column ?? null, message: this.message };
  }
}

export interface BuiltModule {
  /** Absolute path of the entry. */
  file: string;
  code: string;
  map: SourceMapPayload;
  /** Absolute paths of every workspace file bundled into it (the module graph edges). */
  inputs: string[];
  /** Short content hash: the version of this build. */
  hash: string;
}

export interface BundleOptions {
  /** Workspace root: file names in errors are shown relative to it. */
  root: string;
  /** Import specifiers provided by the host instead of bundled. */
  provided: string[];
}

const rel = (root: string, file: string) => path.relative(root, file) || file;

/** What decides a bundle besides its inputs; part of the build cache's key (core/kernel/build-cache.ts). */
export const BUNDLE_FORMAT = 'cjs node22 external-map v1';

/** The build cache's key for bundles made with these provided modules (core/kernel/build-cache.ts). */
export const bundleCacheKey = (provided: readonly string[]) => `${esbuildVersion()} ${BUNDLE_FORMAT} ${[...provided].sort().join(',')}`;

export async function bundleDropIn(file: string, { root, provided }: BundleOptions): Promise<BuiltModule> {
  let result: BuildResult<{ write: false; metafile: true }>;
  try {
    result = await esbuild().build({
      entryPoints: [file],
      absWorkingDir: root,
      bundle: true,
      write: false,
      metafile: true,
      format: 'cjs',
      platform: 'node',
      target: 'node22',
      sourcemap: 'external',
      sourcesContent: false,
      outfile: path.join(root, '.hangar', 'build', path.basename(file) + '.cjs'),
      external: provided.flatMap((id) => [id, `${id}/*`]),
      logLevel: 'silent',
    });
  } catch (err) {
    const failure = err as BuildFailure;
    const first = failure.errors?.[0];
    if (!first) throw new DropInError((err as Error).message, { file: rel(root, file) });
    const where = first.location;
    throw new DropInError(first.text, {
      file: where ? where.file : rel(root, file),
      line: where?.line,
      column: where ? where.column + 1 : undefined,
    });
  }
  const js = result.outputFiles.find((f) => f.path.endsWith('.cjs'))!;
  const map = result.outputFiles.find((f) => f.path.endsWith('.map'))!;
  return {
    file,
    code: js.text,
    map: JSON.parse(map.text) as SourceMapPayload,
    inputs: Object.keys(result.metafile.inputs).map((input) => path.resolve(root, input)),
    hash: createHash('sha1').update(js.text).digest('hex').slice(0, 10),
  };
}

const virtualName = (built: BuiltModule) => virtualNameOf(built.file, built.hash);

/**
 * Runs whatever `globalThis[EVALUATING]` holds, under a `vm` timeout. The wrapper function itself
 * is compiled by its own script (so stack lines keep mapping to the drop-in's source); calling it
 * from this one puts the drop-in's top level inside `runInThisContext`, whose `timeout` watchdog
 * interrupts even a synchronous `while (true) {}` there.
 */
const EVALUATING = Symbol.for('hangar.evaluating');
const INVOKE = new vm.Script(`globalThis[Symbol.for('hangar.evaluating')]()`, { filename: 'hangar-dropin-evaluate' });

/**
 * Evaluate a bundle and return its exports. A throw at import time becomes a `DropInError`
 * located at the original file and line; top-level code still running after `timeoutMs` is
 * interrupted and becomes the `DropInError` "top-level code did not finish in N ms".
 *
 * Accepted edge case: the interruption lands wherever the top level is, possibly inside a
 * `require()` of a package it was loading, whose half-initialised module may stay in Node's cache.
 */
export function evaluateModule(
  built: BuiltModule,
  {
    root,
    provided,
    timeoutMs,
    codeCache,
    onCodeCache,
  }: {
    root: string;
    provided: Record<string, unknown>;
    timeoutMs?: number;
    /** V8's code cache of this bundle from an earlier process (`script.createCachedData()`). */
    codeCache?: Buffer;
    /** Given a fresh code cache after a successful evaluation that had none, or whose cache V8 refused. */
    onCodeCache?: (data: Buffer) => void;
  },
): Record<string, unknown> {
  const hostRequire = createRequire(built.file);
  const requireFn = (id: string) => (Object.hasOwn(provided, id) ? provided[id] : hostRequire(id));
  const module = { exports: {} as Record<string, unknown> };
  // Known before evaluating: a throw at import time, and every later run error, is mapped with it.
  rememberBuild(built.file, built.hash, root, built.map);
  rememberBundle(built);
  try {
    // With a code cache V8 neither parses the bundle nor compiles the functions its top level ran:
    // ~0.1 ms of CPU per small drop-in without one, ~0.03 with (1,000 generated agents, 106 → 30 ms).
    // V8 checks the cache against the source and its own version and flags, and refuses a stale one.
    const script = new vm.Script(`${WRAPPER_HEAD}${built.code}\n})`, { filename: virtualName(built), cachedData: codeCache });
    const fn = script.runInThisContext() as (...args: unknown[]) => void;
    const run = () => fn.call(module.exports, module.exports, requireFn, module, built.file, path.dirname(built.file));
    if (timeoutMs === undefined) run();
    else {
      (globalThis as Record<symbol, unknown>)[EVALUATING] = run;
      try {
        INVOKE.runInThisContext({ timeout: timeoutMs });
      } finally {
        delete (globalThis as Record<symbol, unknown>)[EVALUATING];
      }
    }
    // Made after the top level ran, so it holds the functions compiled lazily while it ran too.
    if (onCodeCache && (!codeCache || script.cachedDataRejected)) onCodeCache(script.createCachedData());
  } catch (err) {
    if ((err as { code?: unknown })?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      throw new DropInError(`top-level code did not finish in ${timeoutMs} ms`, { file: rel(root, built.file) });
    }
    const location = locateError(err, built, root);
    const message = err instanceof Error ? `${err.name === 'Error' ? '' : err.name + ': '}${err.message}` : String(err);
    throw new DropInError(message, location);
  }
  return module.exports;
}

/**
 * How much longer than its limit a step of `runWithDeadlines` may run before it is interrupted,
 * at most. A vm watchdog costs ~0.65 ms to set up (a thread per call): one per entry was most of
 * a cold start with 1,000 drop-ins.
 */
const SHARED_WATCHDOG_SLACK_MS = 100;

/**
 * Runs `count` synchronous steps in order, each allowed `timeoutMs`, as `evaluateModule` with a
 * `timeoutMs` would, but sharing one vm watchdog between consecutive steps. A watchdog allows
 * `timeoutMs` plus a slack, and no step starts once the slack has passed (the next watchdog takes
 * over), so every step has at least its full `timeoutMs` and a step still running after
 * `timeoutMs` + slack is interrupted: `onTimeout(i)` names it, and the steps after it go on.
 *
 * A step must not use a watchdog of its own (evaluateModule without `timeoutMs`) and should catch
 * its own errors; one it lets through stops the run.
 */
export function runWithDeadlines(
  count: number,
  step: (index: number) => void,
  { timeoutMs, onTimeout }: { timeoutMs: number; onTimeout: (index: number) => void },
): void {
  const slack = Math.min(SHARED_WATCHDOG_SLACK_MS, timeoutMs);
  let next = 0;
  let current = -1;
  while (next < count) {
    const started = performance.now();
    (globalThis as Record<symbol, unknown>)[EVALUATING] = () => {
      do {
        current = next++;
        step(current);
      } while (next < count && performance.now() - started <= slack);
    };
    try {
      INVOKE.runInThisContext({ timeout: timeoutMs + slack });
    } catch (err) {
      if ((err as { code?: unknown })?.code !== 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw err;
      onTimeout(current);
    } finally {
      delete (globalThis as Record<symbol, unknown>)[EVALUATING];
    }
  }
}

/** Map the first stack frame inside the bundle back to the drop-in's own file and line. */
export function locateError(err: unknown, built: BuiltModule, root: string): DropInLocation {
  const stack = err instanceof Error ? (err.stack ?? '') : '';
  const name = virtualName(built).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const frame = new RegExp(`${name}:(\\d+):(\\d+)`).exec(stack);
  if (!frame) return { file: rel(root, built.file) };
  rememberBuild(built.file, built.hash, root, built.map);
  return originalLocation(built.file, built.hash, Number(frame[1]), Number(frame[2])) ?? { file: rel(root, built.file) };
}
