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
 *
 * Beside each bundle, in `<folder>-v8/`, V8's code cache of it (`vm.Script#createCachedData`), as
 * Node keeps one for its own modules (`module.enableCompileCache`): evaluating 1,000 small cached
 * bundles took ~100 ms of CPU compiling them, ~30 ms with their code caches. Each is tagged with
 * the bundle's content hash, so an edited drop-in never gets its old code cache; V8 refuses one
 * made by another V8 version or with other flags, and the drop-in is then compiled and its cache
 * written again.
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

/** A code cache file: the bundle's content hash (ASCII, this many bytes), then V8's data. */
const HASH_BYTES = 10;
const tagOf = (hash: string) => hash.padEnd(HASH_BYTES).slice(0, HASH_BYTES);

export class BuildCache {
  readonly #dir: string;
  readonly #codeDir: string;
  readonly #key: string;

  /**
   * `key` names what else decides the output: the bundler's version and its options
   * (`bundleCacheKey`). `folder`: one per user of the cache (discovery's bundles, the ML plugin
   * pool's), so two builds of one entry with different options do not take turns evicting each other.
   */
  constructor(stateDir: string, key: string, folder = 'dropins') {
    this.#dir = path.join(stateDir, 'build', folder);
    this.#codeDir = path.join(stateDir, 'build', `${folder}-v8`);
    this.#key = key;
  }

  /** V8's code cache of the bundle of `entry` whose content hash is `hash`, if one was kept. */
  readCodeCache(entry: string, hash: string): Buffer | undefined {
    let data: Buffer;
    try {
      data = readFileSync(this.#codeFileOf(entry));
    } catch {
      return undefined;
    }
    if (data.length <= HASH_BYTES || data.toString('latin1', 0, HASH_BYTES) !== tagOf(hash)) return undefined;
    return data.subarray(HASH_BYTES);
  }

  /** Keeps the code cache of a bundle; one that cannot be written only costs the next start its compile. */
  writeCodeCache(entry: string, hash: string, data: Buffer): void {
    try {
      mkdirSync(this.#codeDir, { recursive: true });
      const target = this.#codeFileOf(entry);
      const temp = `${target}.${process.pid}.tmp`;
      writeFileSync(temp, Buffer.concat([Buffer.from(tagOf(hash), 'latin1'), data]));
      renameSync(temp, target);
    } catch {
      // read-only workspace: the next start compiles it again
    }
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
    return path.join(this.#dir, `${entryKey(entry)}.json`);
  }

  #codeFileOf(entry: string): string {
    return path.join(this.#codeDir, `${entryKey(entry)}.bin`);
  }
}

function entryKey(entry: string): string {
  return createHash('sha1').update(entry).digest('hex').slice(0, 16);
}
