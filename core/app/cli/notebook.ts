/**
 * `hangar notebook <command>` (spec 3, Part A, "Notebook CLI commands"). Every command resolves to
 * an exit code; the long-running ones (dev, start, app) resolve when the server is stopped by
 * SIGINT/SIGTERM.
 *
 * Exit codes: 0 success; 1 the notebook ran but a cell failed (`run`), the notebooks differ
 * (`diff`, like diff(1)), a server could not be reached, or an export could not be produced; 2
 * usage errors and unreadable files. Errors are one `hangar: <what> (<how to fix>)` line on stderr
 * (core/app/cli/convention.ts).
 *
 * Decisions where the spec is silent:
 * - `--file` for dev/start is a notebook file (the spec's table says "py file": ours are `.nb.ts`
 *   or `.ipynb`); its folder's parent becomes the workspace when it sits in a `notebooks/` folder,
 *   otherwise its own folder is served as the notebooks folder.
 * - `export` without `-o` writes next to the input: `x.pipeline.json`, `x.html`, `x.pdf`,
 *   `x-docker/`. html and pdf run the notebook first so the report shows fresh outputs
 *   (`--no-run` keeps the outputs stored in the file).
 * - `export --format pipeline` writes a platform pipeline of `notebook` steps (see
 *   core/pipelines/schemas.ts); it is not activated by the export: POST it to /api/v1/pipelines
 *   or write it into the workspace's `pipelines/` folder (`-o pipelines/<name>.json` names the
 *   pipeline after the file, as discovery requires).
 * - `list` without `--server` asks the Hangar running on the current folder's workspace (found
 *   through its runtime file); when none runs it starts one in this process for the command and
 *   says so on stderr. `run` without `--server` runs the notebook in this process, no server needed.
 * - `start` without `--port` opens the notebook in the Hangar running on the workspace when there
 *   is one (its URL, `/ui/#/notebook/<file>`), and only otherwise serves it on 8899.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { serverFor } from '../../kernel/server-files.js';
import { diffNotebooks, formatDiffHtml, formatDiffText } from '../../notebook/diff.js';
import {
  exportDocker,
  htmlToPdf,
  LAYOUTS,
  type Layout,
  MissingBrowserError,
  pipelineDefinition,
  reportHtml,
} from '../../notebook/export.js';
import { convertedPath, formatOf, NotebookFormatError, nameFromPath, readNotebookFile, writeNotebookFile } from '../../notebook/formats.js';
import { outputToText } from '../../notebook/render.js';
import type { Cell, CellState } from '../../notebook/schemas.js';
import {
  type EditorScript,
  type RunningNotebookServer,
  startAppServer,
  startNotebookServer,
  startUiServer,
} from '../../notebook/server.js';
import { type HeadlessRunResult, runNotebook } from '../../notebook/service.js';
import { attachOrStart } from './attach.js';
import { UsageError as CliUsageError, report } from './convention.js';

export const EXPORT_FORMATS = ['pipeline', 'html', 'pdf', 'docker'] as const;

const USAGE = `usage: hangar notebook <command> [options]

commands:
  dev      [--name untitled] [--file F] [--server URL] [--frontend-port 3000] [--backend-port 8899] [--no-browser]
  start    [--name untitled] [--file F] [--server URL] [--port 8899] [--no-browser]
                                                      (default: the Hangar running on the workspace)
  run      <file> [--server URL] [--timeout MS]     run headless; exit 1 if any cell fails
  export   <file> [--format pipeline|html|pdf|docker] [-o PATH] [--no-run]
  app      <file> [--port 8501] [--layout linear|grid|tabs|sidebar|dashboard] [--no-browser]
  list     [--server URL]                            (default: the Hangar running on this folder)
  convert  <file> [-o PATH]                          .nb.ts <-> .ipynb
  diff     <file_a> <file_b> [--html]
`;

/** Where a command writes; tests pass their own to capture output. */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Resolves when the user asks a long-running command to stop (default: SIGINT/SIGTERM). */
  stopSignal?: Promise<void>;
  /** Called once a server is listening (tests use it to reach and stop the server). */
  onListening?: (servers: RunningNotebookServer[]) => void;
  color?: boolean;
}

const defaultIo = (): CliIo => ({
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  color: process.stdout.isTTY,
});

class UsageError extends Error {}

const OPTIONS = {
  name: { type: 'string', default: 'untitled' },
  server: { type: 'string' },
  file: { type: 'string' },
  'frontend-port': { type: 'string', default: '3000' },
  'backend-port': { type: 'string', default: '8899' },
  port: { type: 'string' },
  'no-browser': { type: 'boolean', default: false },
  format: { type: 'string', default: 'pipeline' },
  output: { type: 'string', short: 'o' },
  layout: { type: 'string', default: 'linear' },
  html: { type: 'boolean', default: false },
  timeout: { type: 'string' },
  'no-run': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

function port(value: string | undefined, fallback: number): number {
  const n = Number(value ?? fallback);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`invalid port "${value}"`);
  return n;
}

/**
 * Run a notebook CLI command and return its exit code.
 *
 * @example process.exitCode = await notebookCli(['run', 'notebooks/sales.nb.ts']);
 */
export async function notebookCli(args: string[], io: CliIo = defaultIo()): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    return report(lines(io), err, 'hangar notebook --help');
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (!command) return report(lines(io), new CliUsageError('hangar notebook needs a command', 'see hangar notebook --help'));
  const needFile = (what = 'file') => {
    if (!rest[0]) throw new UsageError(`${command} needs a <${what}>`);
    return resolve(rest[0]);
  };
  try {
    switch (command) {
      case 'run':
        return await runCommand(needFile(), values.server, values.timeout ? Number(values.timeout) : undefined, io);
      case 'convert': {
        const input = needFile();
        const output = resolve(values.output ?? convertedPath(input));
        if (formatOf(input) === formatOf(output)) throw new UsageError(`${basename(output)} has the same format as the input`);
        const notebook = await readNotebookFile(input);
        await writeNotebookFile(notebook, output);
        io.out(`${output}\n`);
        return 0;
      }
      case 'diff': {
        if (rest.length < 2) throw new UsageError('diff needs <file_a> <file_b>');
        const [a, b] = await Promise.all([readNotebookFile(resolve(rest[0])), readNotebookFile(resolve(rest[1]))]);
        const diff = diffNotebooks(a, b);
        io.out(
          values.html
            ? formatDiffHtml(diff, { a: rest[0], b: rest[1] })
            : formatDiffText(diff, { a: rest[0], b: rest[1], color: io.color }),
        );
        return diff.identical ? 0 : 1;
      }
      case 'export':
        return await exportCommand(needFile(), values.format, values.output, !values['no-run'], io);
      case 'list':
        return await listCommand(values.server, io);
      case 'app': {
        const file = needFile();
        if (!LAYOUTS.includes(values.layout as Layout)) throw new UsageError(`--layout must be one of ${LAYOUTS.join(', ')}`);
        const app = await startAppServer({ file, port: port(values.port, 8501), layout: values.layout as Layout });
        return await serve([app], `app "${nameFromPath(file)}" (${values.layout})`, app.url, !values['no-browser'], io);
      }
      case 'start':
      case 'dev':
        return await serveCommand(command, values, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) return report(lines(io), new CliUsageError(err.message, 'see hangar notebook --help'));
    if (err instanceof NotebookFormatError)
      return report(lines(io), new CliUsageError(err.message, 'check the file name and its contents'));
    return report(lines(io), err, 'hangar notebook --help');
  }
}

/** The convention's one-line writer over this CLI's text writer. */
function lines(io: CliIo): { err: (line: string) => void } {
  return { err: (line) => io.err(`${line}\n`) };
}

// ---- run ----------------------------------------------------------------------------------------

function printRun(result: HeadlessRunResult, io: CliIo): void {
  const paint = (code: number, text: string) => (io.color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const mark: Record<CellState, string> = {
    success: paint(32, 'ok'),
    error: paint(31, 'FAILED'),
    stale: paint(33, 'not run'),
    idle: 'idle',
    queued: 'queued',
    running: 'running',
  };
  for (const cell of result.cells as Array<Cell & { state: CellState }>) {
    if (cell.cell_type !== 'code') continue;
    io.out(`── ${cell.name || cell.id} ${mark[cell.state]}\n`);
    // A cell that did not run here still holds the file's outputs: say they are old, do not pass them off as this run's.
    const current = (cell.state === 'success' || cell.state === 'error') && !(cell as { stale_outputs?: boolean }).stale_outputs;
    if (!current && cell.outputs.length > 0) io.out(`${paint(33, '(stale: outputs from an earlier run)')}\n`);
    for (const output of cell.outputs) {
      const text = outputToText(output);
      if (text) io.out(text.endsWith('\n') ? text : `${text}\n`);
    }
  }
  const code = result.cells.filter((c) => c.cell_type === 'code');
  const failed = code.filter((c) => c.state !== 'success').length;
  io.out(`${result.name}: ${code.length - failed}/${code.length} cells succeeded\n`);
}

async function runCommand(file: string, server: string | undefined, timeoutMs: number | undefined, io: CliIo): Promise<number> {
  let result: HeadlessRunResult;
  if (server) {
    const { readFile } = await import('node:fs/promises');
    const content = await readFile(file, 'utf8').catch(() => {
      throw new NotebookFormatError(file, 'no such file');
    });
    const response = await fetch(new URL('/api/notebooks/run', server), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ file_name: basename(file), content, ...(timeoutMs ? { cell_timeout_ms: timeoutMs } : {}) }),
    }).catch((err: Error) => {
      throw new Error(`cannot reach ${server}: ${err.cause instanceof Error ? err.cause.message : err.message}`);
    });
    const body = (await response.json().catch(() => ({}))) as HeadlessRunResult & { detail?: string };
    if (!response.ok) throw new Error(`${server} answered ${response.status}: ${body.detail ?? response.statusText}`);
    result = body;
  } else {
    result = await runNotebook(await readNotebookFile(file), { filePath: file, cellTimeoutMs: timeoutMs });
  }
  printRun(result, io);
  return result.ok ? 0 : 1;
}

// ---- export -------------------------------------------------------------------------------------

async function exportCommand(file: string, format: string, output: string | undefined, run: boolean, io: CliIo): Promise<number> {
  if (!EXPORT_FORMATS.includes(format as (typeof EXPORT_FORMATS)[number])) {
    throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}`);
  }
  const notebook = await readNotebookFile(file);
  const stem = join(dirname(file), nameFromPath(file));
  switch (format) {
    case 'pipeline': {
      const target = resolve(output ?? `${stem}.pipeline.json`);
      // Discovery loads `pipelines/<name>.json` only when the definition's name is <name>.
      const inPipelinesFolder = basename(dirname(target)) === 'pipelines' && target.endsWith('.json');
      const definition = await pipelineDefinition(notebook, file, inPipelinesFolder ? { name: basename(target, '.json') } : {});
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, `${JSON.stringify(definition, null, 2)}\n`);
      io.out(`${target}\n`);
      return 0;
    }
    case 'html':
    case 'pdf': {
      const withOutputs = run ? { ...notebook, cells: (await runNotebook(notebook, { filePath: file })).cells } : notebook;
      const html = reportHtml(withOutputs);
      const target = resolve(output ?? `${stem}.${format}`);
      if (format === 'html') {
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, html);
      } else {
        try {
          await htmlToPdf(html, target);
        } catch (err) {
          if (err instanceof MissingBrowserError) return report(lines(io), err);
          throw err;
        }
      }
      io.out(`${target}\n`);
      return 0;
    }
    case 'docker': {
      const target = resolve(output ?? `${stem}-docker`);
      const files = await exportDocker(notebook, target);
      io.out(`${target}\n${files.map((f) => `  ${f}\n`).join('')}build: docker build -t ${basename(target).toLowerCase()} ${target}\n`);
      return 0;
    }
  }
  return 2;
}

// ---- list ---------------------------------------------------------------------------------------

async function listCommand(serverFlag: string | undefined, io: CliIo): Promise<number> {
  const attached = serverFlag ? undefined : await attachOrStart({ root: process.cwd(), command: 'hangar notebook list', io: lines(io) });
  const server = serverFlag ?? attached!.url;
  try {
    const headers: Record<string, string> = attached?.bearer ? { authorization: `Bearer ${attached.bearer}` } : {};
    const response = await fetch(new URL('/api/notebooks', server), { headers }).catch((err: Error) => {
      throw new Error(
        `cannot reach ${server}: ${err.cause instanceof Error ? err.cause.message : err.message} (is it running? \`hangar list\` shows the running servers)`,
      );
    });
    if (!response.ok) throw new Error(`${server} answered ${response.status}`);
    const { notebooks } = (await response.json()) as { notebooks: Array<{ id: string; format: string; modified: string; open: boolean }> };
    if (notebooks.length === 0) io.out(`no notebooks on ${server}\n`);
    for (const n of notebooks) io.out(`${n.id}\t${n.format}\t${n.modified}${n.open ? '\topen' : ''}\n`);
    return 0;
  } finally {
    await attached?.close();
  }
}

// ---- servers ------------------------------------------------------------------------------------

function openBrowser(url: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'cmd' : 'xdg-open';
  const args = process.platform === 'win32' ? ['/c', 'start', '', url] : [url];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => undefined); // no opener installed: the URL is printed anyway
    child.unref();
  } catch {
    // Same: printing the URL is enough.
  }
}

function stopSignal(): Promise<void> {
  return new Promise((resolveStop) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolveStop();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

async function serve(servers: RunningNotebookServer[], what: string, url: string, browser: boolean, io: CliIo): Promise<number> {
  io.out(`${what} on ${url}\n`);
  io.onListening?.(servers);
  if (browser) openBrowser(url);
  await (io.stopSignal ?? stopSignal());
  await Promise.all(servers.map((s) => s.close()));
  return 0;
}

/** Workspace root and initial notebook id for dev/start, from `--file` and `--name`. */
async function workspaceFor(file: string | undefined, name: string): Promise<{ root: string; initial: string }> {
  if (file) {
    const full = resolve(file);
    if (!existsSync(full)) throw new NotebookFormatError(full, 'no such file');
    const dir = dirname(full);
    return basename(dir) === 'notebooks' ? { root: dirname(dir), initial: basename(full) } : { root: dir, initial: basename(full) };
  }
  const root = process.cwd();
  const initial = `${name}.nb.ts`;
  const path = join(root, 'notebooks', initial);
  if (!existsSync(path)) {
    const { Notebook } = await import('../../notebook/schemas.js');
    await writeNotebookFile(Notebook.parse({ name, cells: [{}] }), path);
  }
  return { root, initial };
}

/**
 * The UI notebook view's CodeMirror cell editor, bundled for the editor page of start and dev.
 * Imported on the page's first request: the bundler (esbuild) is not loaded for other commands.
 */
const cellEditor: EditorScript = () => import('../../ui/assets.js').then((assets) => assets.cellEditorAsset());

async function serveCommand(command: 'start' | 'dev', values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number> {
  if (values.server) {
    // The notebook lives on a remote Hangar: nothing to serve locally, point the user there.
    const url = `${String(values.server).replace(/\/$/, '')}/?notebook=${encodeURIComponent(`${values.name}.nb.ts`)}`;
    io.out(`notebook "${values.name}" on ${url}\n`);
    if (!values['no-browser']) openBrowser(url);
    return 0;
  }
  const { root, initial } = await workspaceFor(values.file as string | undefined, String(values.name));
  // A Hangar already serving this workspace has the notebooks in its UI: open it there rather than
  // a second server on another port (as `jupyter notebook` reuses a running server).
  const running = command === 'start' && values.port === undefined ? await serverFor(root) : undefined;
  if (running) {
    const url = `${running.url}/ui/#/notebook/${encodeURIComponent(initial)}`;
    io.out(`notebook "${nameFromPath(initial)}" on ${url} (the Hangar running on ${root})\n`);
    if (!values['no-browser']) openBrowser(url);
    return 0;
  }
  if (command === 'start') {
    const server = await startNotebookServer({
      root,
      port: port(values.port as string | undefined, 8899),
      ui: true,
      initial,
      editorScript: cellEditor,
    });
    return serve([server], 'notebook server', `${server.url}/?notebook=${encodeURIComponent(initial)}`, !values['no-browser'], io);
  }
  const frontendPort = port(values['frontend-port'] as string, 3000);
  const backendPort = port(values['backend-port'] as string, 8899);
  const backend = await startNotebookServer({ root, port: backendPort, allowOrigin: `http://127.0.0.1:${frontendPort}` });
  const frontend = await startUiServer({
    root,
    port: frontendPort,
    api: backend.url,
    initial,
    onFileChange: (id) => backend.service.reloadIfChanged(id),
    editorScript: cellEditor,
  }).catch(async (err) => {
    await backend.close();
    throw err;
  });
  io.out(`API on ${backend.url}\n`);
  return serve(
    [frontend, backend],
    'notebook UI (hot reload)',
    `${frontend.url}/?notebook=${encodeURIComponent(initial)}`,
    !values['no-browser'],
    io,
  );
}
