/**
 * esbuild's JavaScript API, loaded on first use. Loading it costs ~10 ms of CPU (a CommonJS module
 * from node_modules, compiled at every start: it is external to dist/), and a start whose drop-in
 * builds are all in the build cache never calls it. Its version, which keys that cache, is read
 * from its package.json instead.
 *
 * Required from this module's own URL; bundled as CommonJS (a worker bundle) `import.meta.url` is
 * empty, and there the bundle's own `require` is the one. Not `typeof require` first: in an ES
 * module bundle without dist/'s banner (a notebook's exported runner) esbuild's `require` shim is a
 * function that throws.
 */
import { createRequire } from 'node:module';
import type * as Esbuild from 'esbuild';

let requireHere: NodeJS.Require | undefined;
const load = (id: string): unknown => (requireHere ??= import.meta.url ? createRequire(import.meta.url) : require)(id);

let loaded: typeof Esbuild | undefined;
export function esbuild(): typeof Esbuild {
  loaded ??= load('esbuild') as typeof Esbuild;
  return loaded;
}

let version: string | undefined;
/** The installed esbuild's version, without loading it. */
export function esbuildVersion(): string {
  version ??= (load('esbuild/package.json') as { version: string }).version;
  return version;
}
