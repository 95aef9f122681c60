/**
 * Notebook sessions of a workspace: finds notebook files under `<root>/notebooks/`, opens each at
 * most once (one session, one kernel), creates new ones, and runs posted documents headlessly (what
 * `hangar notebook run --server URL` calls). No HTTP here: errors are catalogue errors (`fail`) the routes pass on.
 *
 * Path confinement: a notebook id is a path relative to `notebooks/` using `/`. Absolute paths,
 * `..` segments, NUL bytes, non-notebook extensions and symlinks that resolve outside the folder
 * are refused before any file is touched.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { fail } from '../kernel/errors.js';
import { watchTree } from '../kernel/watch-tree.js';
import {
  formatOf,
  isNotebookFile,
  NotebookFormatError,
  nameFromPath,
  parseNotebook,
  readNotebookFile,
  writeNotebookFile,
} from './formats.js';
import { type Cell, type CellState, Notebook } from './schemas.js';
import { NotebookSession } from './session.js';

export interface NotebookSummary {
  id: string;
  name: string;
  format: 'nb.ts' | 'ipynb';
  size: number;
  modified: string;
  open: boolean;
}

export interface NotebookServiceOptions {
  /** The workspace folder; notebooks live in `<root>/notebooks`. */
  root: string;
  /** Default per-cell timeout for sessions this service opens (ms, 0 = none). */
  cellTimeoutMs?: number;
  /** Heap limit of each kernel in MB; a cell exceeding it crashes its kernel, never the server. */
  maxHeapMb?: number;
  /** Follow disk edits of open notebooks with a watcher of our own (the notebook CLI's servers have theirs). */
  watch?: boolean;
}

export interface HeadlessRunResult {
  name: string;
  ok: boolean;
  cells: Array<Cell & { state: CellState }>;
}

/** A file that does not parse as a notebook is the caller's to fix: 422 with where and why. */
export function toServiceError(err: unknown): unknown {
  if (err instanceof NotebookFormatError) return fail('HANGAR_NOTEBOOK_FORMAT_INVALID', { problem: err.message });
  return err;
}

async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toServiceError(err);
  }
}

export class NotebookService {
  readonly dir: string;
  readonly #cellTimeoutMs: number;
  readonly #maxHeapMb: number | undefined;
  readonly #sessions = new Map<string, Promise<NotebookSession>>();
  readonly #watchFiles: boolean;
  #watcher: { close(): void } | undefined;

  constructor(options: NotebookServiceOptions) {
    this.dir = resolve(options.root, 'notebooks');
    this.#watchFiles = options.watch ?? false;
    this.#cellTimeoutMs = options.cellTimeoutMs ?? 0;
    this.#maxHeapMb = options.maxHeapMb;
  }

  /** Resolve a notebook id to a file inside `notebooks/`, refusing anything that escapes it. */
  async resolvePath(id: string): Promise<string> {
    if (!id || id.includes('\0') || id.startsWith('/') || /^[a-zA-Z]:/.test(id) || id.split(/[\\/]/).includes('..')) {
      throw fail('HANGAR_NOTEBOOK_PATH_INVALID', { notebook: id });
    }
    if (!isNotebookFile(id)) throw fail('HANGAR_NOTEBOOK_PATH_NOT_NOTEBOOK', { notebook: id });
    const file = resolve(this.dir, id);
    if (!file.startsWith(this.dir + sep)) throw fail('HANGAR_NOTEBOOK_PATH_OUTSIDE', { notebook: id });
    // A symlink inside notebooks/ may still point outside it.
    const real = await realpath(file).catch(() => undefined);
    if (real) {
      const realDir = await realpath(this.dir);
      if (!real.startsWith(realDir + sep)) throw fail('HANGAR_NOTEBOOK_PATH_LEAVES_FOLDER', { notebook: id });
    }
    return file;
  }

  async list(): Promise<NotebookSummary[]> {
    const found: NotebookSummary[] = [];
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
        const full = join(dir, entry.name);
        if (entry.isDirectory()) await walk(full);
        else if (entry.isFile() && isNotebookFile(entry.name)) {
          const info = await stat(full);
          const id = relative(this.dir, full).split(sep).join('/');
          found.push({
            id,
            name: nameFromPath(id),
            format: formatOf(id),
            size: info.size,
            modified: info.mtime.toISOString(),
            open: this.#sessions.has(id),
          });
        }
      }
    };
    await walk(this.dir);
    return found.sort((a, b) => a.id.localeCompare(b.id));
  }

  /**
   * `sales` names `sales.nb.ts` (or else `sales.ipynb`) when it exists, as Jupyter's and marimo's
   * links name a notebook without caring about its suffix; any other id is returned as given.
   */
  canonicalId(id: string): string {
    if (isNotebookFile(id) || !id || id.includes('\0')) return id;
    for (const suffix of ['.nb.ts', '.ipynb']) {
      if (existsSync(join(this.dir, `${id}${suffix}`))) return `${id}${suffix}`;
    }
    return id;
  }

  /** The session for a notebook file, opening it (and parsing the file) on first use. */
  open(name: string): Promise<NotebookSession> {
    const id = this.canonicalId(name);
    let session = this.#sessions.get(id);
    if (!session) {
      session = guard(async () => {
        const file = await this.resolvePath(id);
        const exists = await stat(file).then(
          (s) => s.isFile(),
          () => false,
        );
        if (!exists) throw fail('HANGAR_NOTEBOOK_NOT_FOUND', { notebook: id });
        const opened = new NotebookSession(await readNotebookFile(file), {
          filePath: file,
          cellTimeoutMs: this.#cellTimeoutMs,
          ...(this.#maxHeapMb ? { maxHeapMb: this.#maxHeapMb } : {}),
        });
        await opened.trackDisk();
        if (this.#watchFiles) this.#startWatching();
        return opened;
      });
      this.#sessions.set(id, session);
      // A failed open must not stick: the next request tries again (the file may be fixed by then).
      session.catch(() => this.#sessions.delete(id));
    }
    return session;
  }

  async create(input: { name: string; format: 'nb.ts' | 'ipynb'; cells?: Array<Partial<Cell>> }): Promise<string> {
    const id = `${input.name}.${input.format}`;
    const file = await this.resolvePath(id);
    if (
      await stat(file).then(
        () => true,
        () => false,
      )
    )
      throw fail('HANGAR_NOTEBOOK_EXISTS', { notebook: id });
    await mkdir(this.dir, { recursive: true });
    const notebook = Notebook.parse({ name: input.name, cells: input.cells ?? [{ cell_type: 'code', source: '' }] });
    await writeNotebookFile(notebook, file);
    return id;
  }

  /** Stop a notebook's kernel and forget its session (unsaved edits are dropped). */
  async close(id: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (!session) throw fail('HANGAR_NOTEBOOK_NOT_OPEN', { notebook: id });
    this.#sessions.delete(id);
    await (await session).close();
  }

  /**
   * Run a whole notebook document in a throw-away kernel and return its cells with outputs. Used by
   * remote `hangar notebook run --server URL`; the document is never written to the workspace.
   */
  async runDocument(input: { file_name: string; content: string; cell_timeout_ms?: number }): Promise<HeadlessRunResult> {
    return guard(() =>
      runNotebook(parseNotebook(input.content, input.file_name), { cellTimeoutMs: input.cell_timeout_ms ?? this.#cellTimeoutMs }),
    );
  }

  /**
   * Live reload: the file changed on disk. An open session follows it (`NotebookSession.followDisk`:
   * takes the new version and re-runs what changed, or, with unsaved edits, tells its UI).
   * Returns whether the file differs from what this service holds (so pages should reload);
   * a notebook that is not open always counts as changed.
   */
  async reloadIfChanged(id: string): Promise<boolean> {
    const pending = this.#sessions.get(id);
    if (!pending) return true;
    const session = await pending.catch(() => undefined);
    if (!session) {
      this.#sessions.delete(id);
      return true;
    }
    return session.followDisk();
  }

  /**
   * Follow edits made on disk to open notebooks (the main server, when `watch` is on). Started with
   * the first open session, so a server nobody opens a notebook on watches nothing; fs.watch reports
   * one save as several events, so each file is handled once per 100 ms.
   */
  #startWatching(): void {
    if (this.#watcher) return;
    const pending = new Map<string, NodeJS.Timeout>();
    const tree = watchTree(this.dir, (changed) => {
      const name = relative(this.dir, changed);
      if (!name || name.split(sep).some((part) => part.startsWith('.')) || !isNotebookFile(name)) return;
      const id = name.split(sep).join('/');
      if (!this.#sessions.has(id)) return;
      clearTimeout(pending.get(id));
      pending.set(
        id,
        setTimeout(() => {
          pending.delete(id);
          void this.reloadIfChanged(id).catch(() => undefined);
        }, 100),
      );
    });
    this.#watcher = {
      close: () => {
        tree.close();
        for (const timer of pending.values()) clearTimeout(timer);
      },
    };
  }

  async closeAll(): Promise<void> {
    this.#watcher?.close();
    this.#watcher = undefined;
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(sessions.map(async (s) => (await s.catch(() => undefined))?.close()));
  }
}

/** Run every cell of a notebook in a fresh kernel, then stop the kernel. */
export async function runNotebook(
  notebook: Notebook,
  options: { filePath?: string; cellTimeoutMs?: number } = {},
): Promise<HeadlessRunResult> {
  const session = new NotebookSession(notebook, options);
  try {
    await session.runAll();
    const cells = session.cellsWithState();
    const ok = cells.every((c) => c.cell_type !== 'code' || c.state === 'success');
    return { name: notebook.name, ok, cells };
  } finally {
    await session.close();
  }
}
