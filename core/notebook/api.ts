/**
 * The notebook's programmatic API (spec 3, Part A: "Notebook — name, server, file_path; add cell,
 * connect, run, schedule with a cron expression"), meant to be re-exported by the SDK.
 *
 * The engine (kernel, esbuild, piscina) and the file formats (acorn, ajv) are imported lazily, so
 * importing the SDK stays cheap for drop-ins that never run a notebook.
 *
 * @example
 * const nb = new HangarNotebook({ name: 'nightly' });
 * nb.addCell('const rows = [{ n: 1 }, { n: 2 }]');
 * nb.addCell('rows.length');
 * const result = await nb.run();            // local kernel
 * await nb.connect('http://127.0.0.1:8899'); // later runs go to that Hangar server
 * const job = nb.schedule('0 3 * * *', (r) => console.log(r.ok));
 */
import type * as Croner from 'croner';
import { packageOnFirstUse } from '../lib/on-first-use.js';
import { Cell, type CellType, Notebook } from './schemas.js';
import type { HeadlessRunResult } from './service.js';

/** croner, loaded by the first `schedule` (core/lib/on-first-use.ts): the SDK is loaded at every start. */
const croner = packageOnFirstUse<typeof Croner>('croner');

export interface HangarNotebookOptions {
  name?: string;
  server?: string;
  file_path?: string;
  /** Per-cell time limit for runs, in ms (0 = none). */
  cellTimeoutMs?: number;
}

export interface ScheduledRun {
  /** Next planned run, or null when the schedule has ended. */
  next(): Date | null;
  stop(): void;
}

export class HangarNotebook {
  name: string;
  server: string | undefined;
  file_path: string | undefined;
  cellTimeoutMs: number;
  readonly cells: Cell[] = [];

  constructor(options: HangarNotebookOptions = {}) {
    this.name = options.name ?? 'untitled';
    this.server = options.server;
    this.file_path = options.file_path;
    this.cellTimeoutMs = options.cellTimeoutMs ?? 0;
  }

  /** Read a `.nb.ts` or `.ipynb` file. */
  static async load(filePath: string, options: Omit<HangarNotebookOptions, 'file_path' | 'name'> = {}): Promise<HangarNotebook> {
    const { readNotebookFile } = await import('./formats.js');
    const notebook = await readNotebookFile(filePath);
    const handle = new HangarNotebook({ ...options, name: notebook.name, file_path: filePath });
    handle.cells.push(...notebook.cells);
    return handle;
  }

  addCell(source: string, options: { cell_type?: CellType; name?: string; metadata?: Record<string, unknown> } = {}): Cell {
    const cell = Cell.parse({ ...options, source });
    this.cells.push(cell);
    return cell;
  }

  toRecord(): Notebook {
    return Notebook.parse({ name: this.name, server: this.server, file_path: this.file_path, cells: this.cells });
  }

  /** Point runs at a Hangar server; fails now (not at the first run) when it is unreachable. */
  async connect(server: string | undefined = this.server): Promise<this> {
    if (!server) throw new Error('connect needs a server URL');
    const response = await fetch(new URL('/api/notebooks', server)).catch((err: Error) => {
      throw new Error(`cannot reach ${server}: ${err.cause instanceof Error ? err.cause.message : err.message}`);
    });
    if (!response.ok) throw new Error(`${server} does not serve notebooks (GET /api/notebooks answered ${response.status})`);
    this.server = server;
    return this;
  }

  /** Run every cell in a fresh kernel (local, or on the connected server) and keep the outputs. */
  async run(): Promise<HeadlessRunResult> {
    let result: HeadlessRunResult;
    if (this.server) {
      const { serializeNbTs } = await import('./formats.js');
      const response = await fetch(new URL('/api/notebooks/run', this.server), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          file_name: `${this.name}.nb.ts`,
          content: serializeNbTs(this.toRecord()),
          cell_timeout_ms: this.cellTimeoutMs,
        }),
      });
      const body = (await response.json()) as HeadlessRunResult & { detail?: string };
      if (!response.ok) throw new Error(`${this.server} answered ${response.status}: ${body.detail ?? ''}`);
      result = body;
    } else {
      const { runNotebook } = await import('./service.js');
      result = await runNotebook(this.toRecord(), { filePath: this.file_path, cellTimeoutMs: this.cellTimeoutMs });
    }
    const byId = new Map(result.cells.map((c) => [c.id, c]));
    for (const cell of this.cells) {
      const ran = byId.get(cell.id);
      if (ran) Object.assign(cell, { outputs: ran.outputs, execution_count: ran.execution_count, last_executed: ran.last_executed });
    }
    return result;
  }

  /**
   * Run on a cron schedule (5 or 6 fields, croner syntax), read in `options.timezone` (an IANA
   * name; default the process's zone). Overlapping runs are skipped rather than queued: a notebook
   * slower than its interval would otherwise pile up kernels. An invalid expression throws
   * croner's reason. For schedules that outlive this process, use the server's
   * `POST /api/notebooks/{nb}/schedules` (persisted, with run history).
   */
  schedule(
    cron: string,
    onResult: (result: HeadlessRunResult | Error) => void = () => undefined,
    options: { timezone?: string } = {},
  ): ScheduledRun {
    const job = new (croner().Cron)(cron, { protect: true, ...(options.timezone ? { timezone: options.timezone } : {}) }, async () => {
      try {
        onResult(await this.run());
      } catch (err) {
        onResult(err instanceof Error ? err : new Error(String(err)));
      }
    });
    return { next: () => job.nextRun(), stop: () => job.stop() };
  }

  async save(filePath: string | undefined = this.file_path): Promise<string> {
    if (!filePath) throw new Error('save needs a file path');
    const { writeNotebookFile } = await import('./formats.js');
    await writeNotebookFile(this.toRecord(), filePath);
    this.file_path = filePath;
    return filePath;
  }
}
