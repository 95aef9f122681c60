import { EventEmitter } from 'node:events';
import type { DropInError } from './evaluator.js';

/**
 * What discovery found: the live definition of every drop-in, by kind and name, and the errors of
 * the ones that are broken. Routes read from here on every request, so swapping an entry is the
 * whole of a hot reload. Changes are emitted as `change` events (the UI follows them over ws).
 */

/** How discovery turns a file of one folder into a definition. Subsystems register their kind. */
export interface DropInKind<T> {
  kind: string;
  /** Workspace folder holding the drop-ins, e.g. 'agents'. */
  folder: string;
  /** Also accept `<folder>/<name>.json` (teams, pipelines). */
  json?: boolean;
  /**
   * Validate a module's exports (or parsed JSON) and return the definition; throw an Error whose
   * message says what is wrong. `defaultName` comes from the file name.
   */
  load(exported: unknown, defaultName: string): T;
  nameOf(definition: T): string;
}

export interface RegistryEntry<T = unknown> {
  kind: string;
  name: string;
  /** Path relative to the workspace root. */
  file: string;
  definition: T;
  /** Content hash of the build that produced it. */
  version: string;
  loadedAt: string;
  /** How many times this name has been (re)loaded in this process. */
  loads: number;
}

export interface DropInProblem {
  kind: string;
  /**
   * The name a call would use: the loaded name of its last good version, else the one its file
   * gives (`agents/broken.ts` → `broken`), since a module that does not evaluate names nothing.
   */
  name: string;
  /** The drop-in entry that failed to load (relative path). */
  entry: string;
  /** Where the error is: the entry itself or a file it imports. */
  file: string;
  line: number | null;
  column: number | null;
  message: string;
  /** The lines around `line` with a caret under `column` (core/kernel/code-frame.ts), when known. */
  excerpt: string | null;
  at: string;
}

export type RegistryChange =
  | { type: 'added' | 'updated' | 'removed'; kind: string; name: string; file: string }
  | { type: 'error'; kind: string; file: string; error: DropInProblem }
  | { type: 'error-cleared'; kind: string; file: string };

export class Registry extends EventEmitter<{ change: [RegistryChange] }> {
  private readonly entries = new Map<string, Map<string, RegistryEntry>>();
  private readonly problems = new Map<string, DropInProblem>();
  private readonly loadCounts = new Map<string, number>();

  get<T>(kind: string, name: string): RegistryEntry<T> | undefined {
    return this.entries.get(kind)?.get(name) as RegistryEntry<T> | undefined;
  }

  /**
   * A kind's entries by name, in code-unit order: drop-in names are lowercase letters, digits, '-'
   * and '_', for which it is a collator's order except that '_' comes after the digits, not first.
   * The first `localeCompare` of a process builds ICU's collator (~30 ms of a start-up).
   */
  list<T>(kind: string): RegistryEntry<T>[] {
    return [...(this.entries.get(kind)?.values() ?? [])].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    ) as RegistryEntry<T>[];
  }

  /** The entry registered from `file`, if any. */
  byFile(kind: string, file: string): RegistryEntry | undefined {
    for (const entry of this.entries.get(kind)?.values() ?? []) if (entry.file === file) return entry;
    return undefined;
  }

  set<T>(entry: Omit<RegistryEntry<T>, 'loads' | 'loadedAt'>): RegistryEntry<T> {
    let byName = this.entries.get(entry.kind);
    if (!byName) this.entries.set(entry.kind, (byName = new Map()));
    const key = `${entry.kind}:${entry.name}`;
    const loads = (this.loadCounts.get(key) ?? 0) + 1;
    this.loadCounts.set(key, loads);
    const existed = byName.has(entry.name);
    const full: RegistryEntry<T> = { ...entry, loads, loadedAt: new Date().toISOString() };
    byName.set(entry.name, full);
    this.emit('change', { type: existed ? 'updated' : 'added', kind: entry.kind, name: entry.name, file: entry.file });
    return full;
  }

  remove(kind: string, name: string): boolean {
    const entry = this.entries.get(kind)?.get(name);
    if (!entry) return false;
    this.entries.get(kind)!.delete(name);
    this.emit('change', { type: 'removed', kind, name, file: entry.file });
    return true;
  }

  setProblem(kind: string, entry: string, error: DropInError, about: { name: string; excerpt?: string | null }): void {
    const problem: DropInProblem = {
      kind,
      name: about.name,
      entry,
      ...error.toJSON(),
      excerpt: about.excerpt ?? null,
      at: new Date().toISOString(),
    };
    this.problems.set(`${kind}:${entry}`, problem);
    this.emit('change', { type: 'error', kind, file: entry, error: problem });
  }

  clearProblem(kind: string, file: string): void {
    if (this.problems.delete(`${kind}:${file}`)) this.emit('change', { type: 'error-cleared', kind, file });
  }

  /** The problem of the drop-in a call names, when it has one (see DropInProblem.name). */
  problemNamed(kind: string, name: string): DropInProblem | undefined {
    for (const problem of this.problems.values()) if (problem.kind === kind && problem.name === name) return problem;
    return undefined;
  }

  problemsOf(kind?: string): DropInProblem[] {
    return [...this.problems.values()].filter((p) => kind === undefined || p.kind === kind);
  }

  kinds(): string[] {
    return [...this.entries.keys()];
  }
}
