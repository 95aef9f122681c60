/**
 * esbuild's JavaScript API, loaded on first use (core/lib/on-first-use.ts). Loading it costs ~10 ms
 * of CPU (a CommonJS module from node_modules, compiled at every start: it is external to dist/),
 * and a start whose drop-in builds are all in the build cache never calls it. Its version, which
 * keys that cache, is read from its package.json instead.
 */
import type * as Esbuild from 'esbuild';
import { packageOnFirstUse } from './on-first-use.js';

export const esbuild = packageOnFirstUse<typeof Esbuild>('esbuild');

/** The installed esbuild's version, without loading it. */
export const esbuildVersion = (): string => esbuildPackage().version;
const esbuildPackage = packageOnFirstUse<{ version: string }>('esbuild/package.json');
