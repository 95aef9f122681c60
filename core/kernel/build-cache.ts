/**
 * Drop-in bundles kept on disk between starts, so a cold start evaluates last run's bundles instead
 * of running esbuild over every drop-in again (on the example workspace, discovery is most of
 * start-up). Vite keeps its pre-bundled dependencies the same way (`node_modules/.vite`).
 *
 * A cached bundle is used only when every file esbuild read for it (the workspace files and the
 * packages it bundled) has the size and modification time it had when the bundle was made, and the
 * bundler's version and options are the same. Only the cold scan reads the cache; a file edited
 * while the server runs is always rebuilt (and its new bundle cached).
 *
 * Accepted limit: a file added while no server ran that would change how an import resolves
 * (`./util/index.ts` next to an existing `./util.ts`) is seen at the first edit of an importer, not
 * at start. Deleting `.hangar/build/dropins` clears the cache.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type InputStamp, inputsUnchanged, stampInputs } from '../lib/input-stamps.js';
import type { BuiltModule } from './evaluator.js';

interface CachedBuild {
  key: string;
  inputs: InputStamp[];
  built: BuiltModule;
}

export class BuildCache {
  readonly #dir: string;
  readonly #key: string;

  /**
   * `key` names what else decides the output: the bundler's version and its options
   * (`bundleCacheKey`). `folder`: one per user of the cache (discovery's bundles, the ML plugin
   * pool's), so two builds of one entry with different options do not take turns evicting each other.
   */
  constructor(stateDir: string, key: string, folder = 'dropins') {
    this.#dir = path.join(stateDir, 'build', folder);
    this.#key = key;
  }

  /** The cached bundle of `entry`, when nothing it was built from has changed since. */
  read(entry: string): BuiltModule | undefined {
    let cached: CachedBuild;
    try {
      cached = JSON.parse(readFileSync(this.#fileOf(entry), 'utf8')) as CachedBuild;
    } catch {
      return undefined;
    }
    if (cached.key !== this.#key || cached.built.file !== entry || !inputsUnchanged(cached.inputs)) return undefined;
    return cached.built;
  }

  /** Keeps a fresh bundle; a cache that cannot be written only costs the next start its build. */
  write(built: BuiltModule): void {
    try {
      const inputs = stampInputs(built.inputs);
      mkdirSync(this.#dir, { recursive: true });
      const target = this.#fileOf(built.file);
      // Written aside and renamed, so a crash mid-write never leaves half a bundle to be read.
      const temp = `${target}.${process.pid}.tmp`;
      writeFileSync(temp, JSON.stringify({ key: this.#key, inputs, built } satisfies CachedBuild));
      renameSync(temp, target);
    } catch {
      // read-only workspace, or an input deleted meanwhile: the next start builds it again
    }
  }

  #fileOf(entry: string): string {
    return path.join(this.#dir, `${createHash('sha1').update(entry).digest('hex').slice(0, 16)}.json`);
  }
}
