import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from './log.js';

/**
 * Type errors in drop-ins, reported without blocking a load — the role vite-plugin-checker plays
 * next to Vite's esbuild transforms, which (like our evaluator) strip types without checking them.
 * A `tsc --noEmit` over the workspace's own tsconfig.json runs in the background after discovery
 * and after each batch of reloads, one run at a time; its errors become warnings in the terminal
 * and in /health and /api/v1/status. A drop-in with a type error still loads and serves.
 *
 * Decisions:
 * - Only a workspace with its own tsconfig.json is checked (`hangar init` writes one), with the
 *   first `tsc` found in its node_modules, then Hangar's own. Hangar's repository, the default
 *   workspace, is left out: its tsconfig covers Hangar itself (`npm run typecheck` checks it).
 * - Diagnostics outside the workspace or in node_modules are dropped: they are not the person's.
 */

export interface TypeProblem {
  /** Relative to the workspace. */
  file: string;
  line: number;
  column: number;
  /** `TS2322: Type 'string' is not assignable to type 'number'.` */
  message: string;
}

export interface TypeCheckerOptions {
  root: string;
  /** Hangar's own folder: its tsc is the fallback, and it is never checked as a workspace. */
  installRoot?: string;
  log: Logger;
  /** Waits this long after the last change before running (saves come in bursts). */
  debounceMs?: number;
}

const DIAGNOSTIC = /^(.+?)\((\d+),(\d+)\): error (TS\d+: .*)$/;

export function parseDiagnostics(output: string, root: string): TypeProblem[] {
  const problems: TypeProblem[] = [];
  for (const line of output.split(/\r?\n/)) {
    const m = DIAGNOSTIC.exec(line.trim());
    if (!m) continue;
    const file = path.relative(root, path.resolve(root, m[1]!)).split(path.sep).join('/');
    if (file.startsWith('..') || file.split('/').includes('node_modules')) continue;
    problems.push({ file, line: Number(m[2]), column: Number(m[3]), message: m[4]! });
  }
  return problems;
}

export class TypeChecker {
  #problems: TypeProblem[] = [];
  #timer: NodeJS.Timeout | undefined;
  #running: ChildProcess | undefined;
  #again = false;
  #closed = false;
  #idle: Array<() => void> = [];
  readonly #tsc: string | undefined;

  constructor(private readonly options: TypeCheckerOptions) {
    this.#tsc = this.enabled() ? findTsc(options.root, options.installRoot ?? HANGAR_INSTALL) : undefined;
  }

  /** Whether this workspace gets checked at all (see the decisions above). */
  enabled(): boolean {
    const { root, installRoot = HANGAR_INSTALL } = this.options;
    return path.resolve(root) !== path.resolve(installRoot) && existsSync(path.join(root, 'tsconfig.json'));
  }

  problems(): TypeProblem[] {
    return this.#problems;
  }

  /** Run soon (debounced); a run in progress is followed by one more. */
  schedule(): void {
    if (!this.#tsc || this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#running) this.#again = true;
      else this.#run();
    }, this.options.debounceMs ?? 300);
  }

  /** Resolves once no run is waiting or running (tests use it). */
  idle(): Promise<void> {
    if (!this.#timer && !this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#running?.kill();
    for (const resolve of this.#idle.splice(0)) resolve();
  }

  #run(): void {
    const { root, log } = this.options;
    const started = performance.now();
    let output = '';
    const child = spawn(this.#tsc!, ['--noEmit', '--pretty', 'false', '-p', path.join(root, 'tsconfig.json')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: process.platform === 'win32',
    });
    this.#running = child;
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    child.on('error', (err) => log.warn(`type check could not run ${this.#tsc}: ${err.message}`));
    child.on('close', () => {
      this.#running = undefined;
      if (this.#closed) return;
      const next = parseDiagnostics(output, root);
      const key = (list: TypeProblem[]) => JSON.stringify(list);
      // One line per type error when the set changes, and one when they are gone.
      if (key(next) !== key(this.#problems)) {
        for (const p of next) log.warn(`type error in ${p.file}:${p.line}:${p.column}: ${p.message} (the drop-in still loads)`);
        if (!next.length && this.#problems.length) log.info(`type check clean in ${Math.round(performance.now() - started)} ms`);
      }
      this.#problems = next;
      if (this.#again) {
        this.#again = false;
        this.#run();
      } else if (!this.#timer) {
        for (const resolve of this.#idle.splice(0)) resolve();
      }
    });
  }
}

/** This checkout or installed package: the nearest folder above this module with a package.json (core/kernel/ from source, dist/ when bundled). */
const HANGAR_INSTALL = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 3 && !existsSync(path.join(dir, 'package.json')); up++) dir = path.dirname(dir);
  return dir;
})();

/** The workspace's own tsc (its TypeScript version and settings), else the one Hangar ships with. */
function findTsc(root: string, installRoot: string): string | undefined {
  const bin = process.platform === 'win32' ? 'tsc.cmd' : 'tsc';
  for (const dir of [root, installRoot]) {
    const candidate = path.join(dir, 'node_modules', '.bin', bin);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
