import { existsSync, watch as fsWatch, readFileSync, statSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { glob } from '../lib/glob.js';
import { BuildCache } from './build-cache.js';
import { codeFrame } from './code-frame.js';
import { type BuiltModule, bundleCacheKey, bundleDropIn, DropInError, evaluateModule, runWithDeadlines } from './evaluator.js';
import type { Logger } from './log.js';
import type { DropInKind, Registry } from './registry.js';
import { watchTree } from './watch-tree.js';

/**
 * Finds drop-ins in the workspace, loads them into the registry and keeps them fresh.
 *
 * Entries: `<folder>/<name>.{ts,js,…}` or `<folder>/<name>/index.{ts,js,…}` (and `<folder>/<name>.json`
 * for kinds that accept JSON). Names starting with `_` or `.`, `*.d.ts` and `*.test.*` are skipped,
 * so helpers can live beside entries.
 *
 * Hot reload keeps a module graph — for every entry, the workspace files bundled into it — so a
 * change to a shared helper rebuilds exactly the entries that import it. File events are debounced
 * per path (editors write in bursts) and processed one at a time through a queue, like Vite's HMR
 * queue: a reload never races another reload of the same entry.
 *
 * A broken entry (syntax error, throw at import, invalid definition, duplicate name) keeps its last
 * good version in the registry; the error is recorded against the entry and cleared when it loads.
 * An empty (zero-byte) entry is not loaded: that is what an in-place save looks like between its
 * truncate and its write, and reporting it would flash a false error.
 */

const CODE_EXT = ['ts', 'tsx', 'mts', 'cts', 'js', 'mjs', 'cjs'];

/**
 * The files of a drop-in folder that can be entries — `<folder>/<file>` and `<folder>/<dir>/index.*`
 * (dot-named ones left out, symbolic links followed); `entryOf` decides which are. Two readdirs
 * deep, by hand rather than with tinyglobby: compiling the ~24 patterns that said the same (three
 * per kind) was ~8 ms of every start's CPU (a profile of a cold start), the readdirs well under one.
 */
async function candidatesIn(folder: string): Promise<string[]> {
  const listed = await readdir(folder, { withFileTypes: true }).catch(() => []);
  // Stryker disable next-line ArrayDeclaration: a stray candidate outside every drop-in folder is no entry (entryOf drops it)
  const files: string[] = [];
  await Promise.all(
    listed.map(async (entry) => {
      if (entry.name.startsWith('.')) return;
      const full = path.join(folder, entry.name);
      const isDir = entry.isSymbolicLink()
        ? await stat(full).then(
            (s) => s.isDirectory(),
            () => undefined,
          )
        : entry.isDirectory();
      if (isDir === undefined) return; // a dangling link
      if (!isDir) return void files.push(full);
      // Stryker disable next-line ArrowFunction,ArrayDeclaration: a folder just listed fails to read only if it vanished in between, which no test can time; its own change event loads or drops it
      for (const inner of await readdir(full, { withFileTypes: true }).catch(() => [])) // Stryker disable next-line StringLiteral: entryOf takes only index.<code> from inside a folder, so the name filter only saves candidates
        if (inner.name.startsWith('index.') && !inner.isDirectory()) files.push(path.join(full, inner.name));
    }),
  );
  return files;
}
const SKIP = /(^|\/)[_.][^/]*$|\.d\.[cm]?ts$|\.test\.[^/]+$|\.spec\.[^/]+$/;
const DEBOUNCE_MS = 12;

export interface DiscoveryOptions {
  root: string;
  registry: Registry;
  log: Logger;
  /** Modules provided to drop-ins instead of bundled (the SDK as `hangar`, zod). */
  provided: Record<string, unknown>;
  /**
   * `dropins.loadTimeoutMs`: how long an entry's top-level code may run. Evaluation is synchronous
   * on the server's thread, so a loop there would hold every request; past this it is interrupted
   * and reported like any other load error, and the last good version keeps serving.
   */
  loadTimeoutMs?: number;
  onReload?: (kind: string, outcome: 'ok' | 'error') => void;
}

/** An entry's bundle, or why it could not be built. */
type BuildOutcome = { built: BuiltModule; codeCache?: Buffer; error?: undefined } | { built?: undefined; error: unknown };

/** What an entry path is: its kind and default name. */
interface Entry {
  kind: DropInKind<unknown>;
  defaultName: string;
  json: boolean;
}

interface LoadedFile {
  kind: string;
  name?: string;
  /** Workspace files this entry's bundle contains. */
  inputs: string[];
}

export class Discovery {
  private readonly kinds: DropInKind<unknown>[] = [];
  /** entry (absolute) → what it loaded */
  private readonly files = new Map<string, LoadedFile>();
  /** drop-in folder ('' for the workspace root) → its watcher */
  private readonly watchers = new Map<string, { close(): void }>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private queue: Promise<void> = Promise.resolve();
  private pendingTasks = 0;
  private idleWaiters: Array<() => void> = [];
  ready = false;

  constructor(private readonly options: DiscoveryOptions) {}

  register<T>(kind: DropInKind<T>): void {
    if (this.kinds.some((k) => k.kind === kind.kind || k.folder === kind.folder)) {
      throw new Error(`drop-in kind "${kind.kind}" (folder ${kind.folder}) is already registered`);
    }
    this.kinds.push(kind as DropInKind<unknown>);
  }

  /** Scan every registered folder and load what is there; resolves when all are loaded. */
  async scan(): Promise<void> {
    const { root } = this.options;
    const found = (await Promise.all(this.kinds.map((k) => candidatesIn(path.join(root, k.folder))))).flat();
    // Each entry's kind is worked out once here: path.relative and a regex, ~10 µs, were done three
    // times per entry (~28 ms in a CPU profile of a start with 1,000 drop-ins).
    const kinds = new Map<string, Entry>();
    for (const file of found) {
      const entry = this.entryOf(file);
      if (entry) kinds.set(file, entry);
    }
    const entries = [...kinds.keys()].sort();
    const started = Date.now();
    // Bundle in parallel (esbuild does the heavy lifting off-thread), then register in path order
    // so that of two files claiming one name, the first by path deterministically keeps it.
    const builds = new Map<string, BuildOutcome>();
    let cachedBuilds = 0;
    let codeCaches = 0;
    await Promise.all(
      entries.map(async (file) => {
        if (kinds.get(file)!.json) return;
        const cached = this.buildCache.read(file);
        const codeCache = cached && this.buildCache.readCodeCache(file, cached.hash);
        if (cached) cachedBuilds++;
        if (codeCache) codeCaches++;
        try {
          builds.set(file, { built: cached ?? (await this.bundle(file)), codeCache });
        } catch (error) {
          builds.set(file, { error });
        }
      }),
    );
    // Evaluated one after another on this thread, sharing vm watchdogs (see runWithDeadlines).
    const { loadTimeoutMs } = this.options;
    // Stryker disable next-line BooleanLiteral: under the shared watchdog or one of its own, a top level past loadTimeoutMs ends in the same DropInError (evaluator.ts)
    const loadAt = (i: number) => this.loadBuilt(entries[i]!, builds.get(entries[i]!), performance.now(), false, kinds.get(entries[i]!));
    if (loadTimeoutMs === undefined) for (let i = 0; i < entries.length; i++) loadAt(i);
    else {
      runWithDeadlines(entries.length, loadAt, {
        timeoutMs: loadTimeoutMs,
        onTimeout: (i) => {
          const file = entries[i]!;
          const entry = kinds.get(file);
          const error = new DropInError(`top-level code did not finish in ${loadTimeoutMs} ms`, { file: this.relative(file) });
          // Stryker disable next-line ConditionalExpression: every scanned entry has its kind in `kinds`; the test is for the type checker
          if (entry) this.failed(file, entry, error);
        },
      });
    }
    this.ready = true;
    this.options.log.info('discovery finished', {
      entries: this.files.size,
      cached: cachedBuilds,
      code_cached: codeCaches,
      ms: Date.now() - started,
    });
  }

  /**
   * Watch each drop-in folder's tree (see watch-tree.ts for why not `recursive: true`), plus the
   * workspace root without recursion to see drop-in folders come and go — the workspace may hold
   * node_modules and .git, which must not cost a watch each. Every raw event is kept and debounced
   * per path, so the last of several quick saves always wins.
   */
  async watch(): Promise<void> {
    const { root } = this.options;
    const folders = new Set(this.kinds.map((k) => k.folder));
    const watchFolder = (folder: string) => {
      const dir = path.join(root, folder);
      if (this.watchers.has(folder) || !existsSync(dir)) return;
      this.watchers.set(
        folder,
        watchTree(dir, (changed) => this.schedule(changed)),
      );
    };
    for (const folder of folders) watchFolder(folder);
    const rootWatcher = fsWatch(root, (_event, name) => {
      const folder = name?.toString();
      if (!folder || !folders.has(folder)) return;
      if (existsSync(path.join(root, folder))) {
        watchFolder(folder);
        // Entries written before the watch started are picked up by rescanning the folder.
        this.enqueue(() => this.scanFolder(folder));
      } else {
        this.unwatch(folder);
        this.schedule(path.join(root, folder));
      }
    });
    rootWatcher.on('error', (err) => this.options.log.error('watcher failed', { error: String(err) }));
    this.watchers.set('', rootWatcher);
  }

  private unwatch(folder: string): void {
    this.watchers.get(folder)?.close();
    this.watchers.delete(folder);
  }

  private async scanFolder(folder: string): Promise<void> {
    const found = await glob([`${folder}/**/*`], { cwd: this.options.root, absolute: true, onlyFiles: true, deep: 2 });
    for (const file of found.sort()) if (this.entryOf(file) && !this.files.has(file)) await this.load(file);
  }

  async close(): Promise<void> {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const folder of [...this.watchers.keys()]) this.unwatch(folder);
    await this.queue;
  }

  /** Resolves once no change is waiting or being processed (tests and benchmarks use it). */
  idle(): Promise<void> {
    if (this.pendingTasks === 0 && this.timers.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(file: string): void {
    clearTimeout(this.timers.get(file));
    this.timers.set(
      file,
      setTimeout(() => {
        this.timers.delete(file);
        this.enqueue(() => this.handleChange(file));
      }, DEBOUNCE_MS),
    );
  }

  private enqueue(task: () => Promise<void>): void {
    this.pendingTasks++;
    this.queue = this.queue
      .then(task)
      .catch((err: unknown) => this.options.log.error('reload failed', { error: String(err) }))
      .finally(() => {
        this.pendingTasks--;
        if (this.pendingTasks === 0 && this.timers.size === 0) {
          for (const resolve of this.idleWaiters.splice(0)) resolve();
        }
      });
  }

  private async handleChange(file: string): Promise<void> {
    const affected = new Set<string>();
    // A folder that went away takes its entries with it.
    // Stryker disable next-line ConditionalExpression: for a path that exists, the entries under it are reloaded to the versions they have
    if (!existsSync(file)) {
      for (const entry of this.files.keys()) if (entry.startsWith(file + path.sep)) affected.add(entry);
    }
    // Stryker disable next-line ConditionalExpression: a path that is no entry, added here, loads nothing (load asks entryOf again) or unloads nothing (it was never loaded)
    if (this.entryOf(file)) affected.add(file);
    // Module graph: every entry that bundled this file is stale too.
    for (const [entry, loaded] of this.files) if (loaded.inputs.includes(file)) affected.add(entry);
    for (const entry of affected) {
      if (existsSync(entry)) await this.load(entry);
      else this.unload(entry);
    }
  }

  /** Which kind an entry path belongs to and its default name, or undefined if not an entry. */
  private entryOf(file: string): Entry | undefined {
    const relative = path.relative(this.options.root, file).split(path.sep).join('/');
    if (SKIP.test(relative)) return undefined;
    const parts = relative.split('/');
    const kind = this.kinds.find((k) => k.folder === parts[0]);
    // Stryker disable next-line ConditionalExpression: discovery only meets paths inside the registered kinds' folders (candidatesIn, their watchers)
    if (!kind) return undefined;
    const ext = path.extname(relative).slice(1);
    if (parts.length === 2) {
      if (ext === 'json') return kind.json ? { kind, defaultName: path.basename(parts[1]!, '.json'), json: true } : undefined;
      return CODE_EXT.includes(ext) ? { kind, defaultName: path.basename(parts[1]!, '.' + ext), json: false } : undefined;
    }
    // A folder named with `_` or `.` is a helper's, as such a file is: its index is no entry.
    if (parts.length === 3 && !/^[_.]/.test(parts[1]!) && CODE_EXT.includes(ext) && path.basename(parts[2]!, '.' + ext) === 'index') {
      return { kind, defaultName: parts[1]!, json: false };
    }
    return undefined;
  }

  private relative(file: string): string {
    return path.relative(this.options.root, file).split(path.sep).join('/');
  }

  private async bundle(file: string): Promise<BuiltModule> {
    const built = await bundleDropIn(file, { root: this.options.root, provided: Object.keys(this.options.provided) });
    this.buildCache.write(built);
    return built;
  }

  /** Last start's bundles, for the cold scan (core/kernel/build-cache.ts). */
  private get buildCache(): BuildCache {
    this.#buildCache ??= new BuildCache(path.join(this.options.root, '.hangar'), bundleCacheKey(Object.keys(this.options.provided)));
    return this.#buildCache;
  }
  #buildCache: BuildCache | undefined;

  private async load(file: string): Promise<void> {
    const entry = this.entryOf(file);
    // Stryker disable next-line OptionalChaining,ObjectLiteral,BooleanLiteral: handleChange loads only files it has just seen exist; a file gone in between is a race no test can time
    if (!entry || statSync(file, { throwIfNoEntry: false })?.size === 0) return;
    const started = performance.now();
    let outcome: BuildOutcome | undefined;
    // Stryker disable next-line ConditionalExpression: a JSON entry's build, if made, is never read (loadBuilt parses the file)
    if (!entry.json) {
      try {
        outcome = { built: await this.bundle(file) };
      } catch (error) {
        outcome = { error };
      }
    }
    this.loadBuilt(file, outcome, started, true);
  }

  /**
   * Registers an entry from its build (undefined for JSON entries): evaluates, validates, checks
   * its name. `watchdog`: evaluation gets a vm watchdog of its own; false when the caller runs it
   * under a shared one (the cold scan).
   */
  private loadBuilt(
    file: string,
    outcome: BuildOutcome | undefined,
    started: number,
    watchdog: boolean,
    entry: Entry | undefined = this.entryOf(file),
  ): void {
    // A zero-byte entry is an editor mid-save (truncate, then write): its next event brings the content.
    // Stryker disable next-line OptionalChaining,ObjectLiteral,BooleanLiteral: as in load(): the file was there a moment ago
    if (!entry || statSync(file, { throwIfNoEntry: false })?.size === 0) return;
    const { kind } = entry;
    const { registry, root, log } = this.options;
    const relative = this.relative(file);
    const previous = this.files.get(file);
    try {
      let exported: unknown;
      let version: string;
      // Stryker disable next-line ArrayDeclaration: a JSON entry's own change reaches it through entryOf, not the module graph
      let inputs = [file];
      if (entry.json) {
        const text = readFileSync(file, 'utf8');
        try {
          exported = JSON.parse(text);
        } catch (err) {
          throw new DropInError(`invalid JSON: ${(err as Error).message}`, { file: relative });
        }
        version = jsonDropInVersion(text);
      } else {
        // Stryker disable next-line StringLiteral,OptionalChaining: every code entry reaches here with its build or its build's error
        if (!outcome?.built) throw outcome?.error ?? new Error('no build');
        const { built } = outcome;
        inputs = built.inputs;
        // Record the graph before evaluating, so fixing a broken helper reloads this entry.
        this.files.set(file, { kind: kind.kind, name: previous?.name, inputs });
        // Stryker disable next-line OptionalChaining: an entry's loaded name stays registered to it until its file is unloaded
        if (previous?.name && registry.get(kind.kind, previous.name)?.version === built.hash) {
          registry.clearProblem(kind.kind, relative);
          return;
        }
        const module = evaluateModule(built, {
          root,
          provided: this.options.provided,
          timeoutMs: watchdog ? this.options.loadTimeoutMs : undefined,
          codeCache: outcome.codeCache,
          onCodeCache: (data) => this.buildCache.writeCodeCache(file, built.hash, data),
        });
        exported = module.default ?? module[kind.kind] ?? module;
        version = built.hash;
      }
      let definition: unknown;
      try {
        definition = kind.load(exported, entry.defaultName);
      } catch (err) {
        throw new DropInError(`invalid ${kind.kind} definition: ${(err as Error).message}`, { file: relative });
      }
      const name = kind.nameOf(definition);
      const holder = registry.get(kind.kind, name);
      if (holder && holder.file !== relative) {
        throw new DropInError(`duplicate ${kind.kind} name "${name}": defined in ${holder.file} and ${relative}`, {
          file: relative,
        });
      }
      // A rename inside the file: the old name goes away.
      if (previous?.name && previous.name !== name) registry.remove(kind.kind, previous.name);
      this.files.set(file, { kind: kind.kind, name, inputs });
      registry.set({ kind: kind.kind, name, file: relative, definition, version });
      registry.clearProblem(kind.kind, relative);
      this.options.onReload?.(kind.kind, 'ok');
      // After the first scan every load is a reload the person caused by saving: one line says it
      // was picked up (as Vite's "hmr update"); the first scan's loads stay at debug.
      const ms = Math.round(performance.now() - started);
      if (this.ready) log.info(`${previous ? 'reloaded' : 'loaded'} ${relative} in ${ms} ms`);
      else log.debug('drop-in loaded', { kind: kind.kind, name, file: relative, version });
    } catch (err) {
      this.failed(file, entry, err instanceof DropInError ? err : new DropInError(String(err), { file: relative }));
    }
  }

  /** Records an entry that did not load; its last good version (if any) keeps serving. */
  private failed(file: string, entry: { kind: DropInKind<unknown>; defaultName: string }, error: DropInError): void {
    const { kind } = entry;
    const { registry, log } = this.options;
    // Stryker disable next-line ArrayDeclaration: an entry's own changes reach it through entryOf; its inputs add only the files it bundled
    if (!this.files.has(file)) this.files.set(file, { kind: kind.kind, inputs: [file] });
    const excerpt = this.excerptOf(error);
    // Stryker disable next-line OptionalChaining: the line above has just recorded the file
    registry.setProblem(kind.kind, this.relative(file), error, { name: this.files.get(file)?.name ?? entry.defaultName, excerpt });
    this.options.onReload?.(kind.kind, 'error');
    const where = error.line ? `${error.file}:${error.line}${error.column ? ':' + error.column : ''}` : error.file;
    // One record whose text carries the code frame, so the terminal shows the failing lines.
    log.error(`drop-in error in ${where}: ${error.message}${excerpt ? `\n${excerpt}` : ''}`);
  }

  /** The code frame of an error's location, read from the file it names (an entry or a helper). */
  private excerptOf(error: DropInError): string | null {
    // Stryker disable next-line ConditionalExpression: without a line, codeFrame has no frame to give either, which is null here too
    if (!error.line) return null;
    try {
      return codeFrame(readFileSync(path.resolve(this.options.root, error.file), 'utf8'), error.line, error.column) || null;
    } catch {
      return null;
    }
  }

  private unload(file: string): void {
    const loaded = this.files.get(file);
    this.files.delete(file);
    if (!loaded) return;
    const { registry, log } = this.options;
    const relative = this.relative(file);
    registry.clearProblem(loaded.kind, relative);
    // Stryker disable next-line OptionalChaining: a name recorded for the file is registered until it is unloaded
    if (loaded.name && registry.get(loaded.kind, loaded.name)?.file === relative) {
      registry.remove(loaded.kind, loaded.name);
      log.info('drop-in removed', { kind: loaded.kind, name: loaded.name, file: relative });
      // A file that lost a duplicate-name contest may take the name now.
      for (const problem of registry.problemsOf(loaded.kind)) {
        if (problem.message.includes(`duplicate ${loaded.kind} name "${loaded.name}"`)) {
          this.enqueue(() => this.load(path.resolve(this.options.root, problem.entry)));
        }
      }
    }
  }
}

/**
 * The version of a JSON drop-in: its length and FNV-1a hash. Exported so a subsystem that writes a
 * drop-in file itself (pipelines saved through the API) registers the same version the watcher will.
 */
export function jsonDropInVersion(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return `${text.length}:${(h >>> 0).toString(16)}`;
}
