/**
 * npm packages loaded by their first use rather than as the modules that use them load, for calls
 * a start never makes: esbuild (builds when a drop-in is not in the build cache), ajv (an .ipynb's
 * schema check, a pipeline's `input_schema`), acorn (parsing a notebook cell) and croner (a
 * schedule). They are left in node_modules (scripts/build.mjs, KEEP_EXTERNAL and CLI_LOADS_ON_USE):
 * bundled, ajv, acorn and croner were evaluated at every start, ~15 ms of its CPU (8.7, 3.4 and
 * 2-4.5: module timings of the example workspace's start, session 25), and their 500 KB of source
 * were read with the rest of dist/cli.cjs.
 *
 * Required from this module's own URL; bundled as CommonJS (a worker bundle) `import.meta.url` is
 * empty, and there the bundle's own `require` is the one. Not `typeof require` first: in an ES
 * module bundle without dist/'s banner (a notebook's exported runner) esbuild's `require` shim is a
 * function that throws.
 */
import { createRequire } from 'node:module';

let requireHere: NodeJS.Require | undefined;

/** A function returning package `id` (or a file in one), required from node_modules by its first call. */
export function packageOnFirstUse<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded === undefined) {
      requireHere ??= import.meta.url ? createRequire(import.meta.url) : require;
      loaded = requireHere(id) as T;
    }
    return loaded;
  };
}
