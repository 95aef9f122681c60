/**
 * Exports of a notebook: a self-contained HTML report (also the body of `notebook app`), a PDF of
 * that report printed by a local Chromium/Chrome, a platform pipeline definition, and a Docker
 * bundle that runs the notebook headlessly.
 *
 * Everything is offline: the HTML inlines its CSS, images are data URLs, charts are inline SVG.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { basename, delimiter, dirname, join, resolve, sep } from 'node:path';
import type { Metafile } from 'esbuild';
import { marked } from 'marked';
import { esbuild } from '../lib/esbuild.js';
import { PIPELINE_NAME, type PipelineDefinitionInput } from '../pipelines/schemas.js';
import { analyzeNotebook } from './analysis/index.js';
import { APP_FRAME_SCRIPT, type UiPayload, uiControlHtml } from './app-bridge.js';
import { assetDir, packageRoot } from './assets.js';
import { serializeNbTs } from './formats.js';
import { classifySpecifier } from './import-specifiers.js';
import { escapeHtml, outputToHtml } from './render.js';
import type { Notebook, Output } from './schemas.js';
import { UI_MIME } from './ui-elements.js';

export const LAYOUTS = ['linear', 'grid', 'tabs', 'sidebar', 'dashboard'] as const;
export type Layout = (typeof LAYOUTS)[number];

export const renderMarkdown = (md: string): string => marked.parse(md, { async: false, gfm: true });

const STYLE = `
*{box-sizing:border-box}body{font-family:system-ui,-apple-system,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:980px;margin:0 auto;padding:2rem}
.stale-note{color:#9a6700;background:#fff8c5;border-left:3px solid #d4a72c;padding:.2rem .5rem;font-size:.85rem;margin:.3rem 0}
.cell.stale .outputs>:not(.stale-note){opacity:.6}
h1.title{font-size:1.6rem;margin:.2rem 0 1.5rem}
.cell{margin:0 0 1.25rem}
.cell pre.source{background:#f6f8fa;border:1px solid #e5e7eb;border-radius:6px;padding:.75rem;overflow:auto;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace}
.cell .label{font:12px ui-monospace,monospace;color:#57606a;margin-bottom:.25rem}
.outputs pre{margin:.25rem 0;white-space:pre-wrap;font:13px/1.45 ui-monospace,monospace}
.output-stream.stderr{color:#9a6700}.output-error{color:#cf222e;background:#fff5f5;padding:.5rem;border-radius:6px}
table.hangar-table{border-collapse:collapse;font-size:13px;margin:.5rem 0}
table.hangar-table caption{caption-side:bottom;color:#57606a;font-size:12px;text-align:left;padding-top:.25rem}
table.hangar-table th,table.hangar-table td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left}
table.hangar-table td.num{text-align:right;font-variant-numeric:tabular-nums}
table.hangar-table thead{background:#f6f8fa}
.output-html svg{max-width:100%;height:auto}
.output-json{font:13px ui-monospace,monospace}.output-json ul{list-style:none;margin:0;padding-left:1.2rem}
.output-json summary{cursor:pointer;color:#57606a}.json-key{color:#0550ae}.json-string{color:#0a3069}.json-number{color:#953800}
.layout-grid .cells{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:1rem}
.layout-dashboard .cells{display:grid;grid-template-columns:repeat(12,1fr);gap:1rem}
.layout-dashboard .cell{grid-column:span 6;border:1px solid #d0d7de;border-radius:8px;padding:1rem;margin:0}
.layout-dashboard .cell.markdown{grid-column:span 12;border:none;padding:0}
.layout-grid .cell{border:1px solid #d0d7de;border-radius:8px;padding:1rem;margin:0}
.layout-sidebar main{display:flex;gap:2rem;max-width:1200px}
.layout-sidebar aside{flex:0 0 260px;border-right:1px solid #d0d7de;padding-right:1rem}
.layout-sidebar .cells{flex:1;min-width:0}
.tabs{display:flex;gap:.25rem;border-bottom:1px solid #d0d7de;margin-bottom:1rem;flex-wrap:wrap}
.tabs button{border:1px solid #d0d7de;border-bottom:none;background:#f6f8fa;padding:.4rem .8rem;border-radius:6px 6px 0 0;cursor:pointer}
.tabs button[aria-selected=true]{background:#fff;font-weight:600}
.layout-tabs .cell[hidden]{display:none}
.ui-control{margin:.5rem 0}.ui-control label{display:inline-flex;gap:.5rem;align-items:center}
.ui-table{border-collapse:collapse}.ui-table td,.ui-table th{border:1px solid #d0d7de;padding:.2rem .5rem}
`;

export interface ReportOptions {
  /** Outputs only (the `app` view). */
  hideCode?: boolean;
  layout?: Layout;
  /**
   * Live controls for interactive elements and the frame's side of the app bridge
   * (core/notebook/app-bridge.ts); without it an element shows its value as static text.
   */
  interactive?: boolean;
}

function cellTitle(cell: Notebook['cells'][number], index: number): string {
  if (cell.name) return cell.name;
  const heading = /^#+\s+(.+)$/m.exec(cell.source);
  return heading ? heading[1] : `Cell ${index + 1}`;
}

/** Outputs are current only when this run made them; a cell without a state carries the file's outputs. */
type ReportCell = Notebook['cells'][number] & { state?: string; stale_outputs?: boolean };
const outputsAreCurrent = (cell: ReportCell) => (cell.state === 'success' || cell.state === 'error') && !cell.stale_outputs;

/** A code cell's outputs as HTML; `interactive` draws interactive elements as live controls. */
export function cellOutputsHtml(cell: { outputs: Output[] }, options: { interactive?: boolean } = {}): string {
  return cell.outputs
    .map((o) => {
      const ui = options.interactive && 'data' in o ? (o.data[UI_MIME] as UiPayload | undefined) : undefined;
      return ui ? uiControlHtml(ui) : outputToHtml(o, renderMarkdown);
    })
    .join('\n');
}

/**
 * A self-contained HTML page of the notebook with its outputs. Outputs an earlier run made (saved
 * in the file, not re-run now) are marked stale, with their execution count starred, so a page
 * never passes old results off as fresh ones.
 */
export function reportHtml(notebook: { name: string; cells: ReportCell[] }, options: ReportOptions = {}): string {
  const layout = options.layout ?? 'linear';
  const cellHtml = notebook.cells
    .map((cell, index) => {
      if (cell.cell_type === 'markdown') {
        return `<section class="cell markdown" data-title="${escapeHtml(cellTitle(cell, index))}">${renderMarkdown(cell.source)}</section>`;
      }
      if (cell.cell_type === 'raw')
        return options.hideCode ? '' : `<section class="cell raw"><pre class="source">${escapeHtml(cell.source)}</pre></section>`;
      const stale = cell.outputs.length > 0 && !outputsAreCurrent(cell);
      const staleNote = stale ? '<div class="stale-note" role="note">stale: outputs from an earlier run, not re-run</div>' : '';
      const outputs = staleNote + cellOutputsHtml(cell, options);
      if (options.hideCode && !outputs) return '';
      const count = cell.execution_count ? `${cell.execution_count}${stale ? '*' : ''}` : ' ';
      const code = options.hideCode
        ? ''
        : `<div class="label">[${count}] ${escapeHtml(cell.name || cell.id)}</div><pre class="source"><code>${escapeHtml(cell.source)}</code></pre>`;
      return `<section class="cell code${stale ? ' stale' : ''}" data-title="${escapeHtml(cellTitle(cell, index))}">${code}<div class="outputs" data-cell-outputs="${escapeHtml(cell.id)}">${outputs}</div></section>`;
    })
    .filter(Boolean);

  let body: string;
  if (layout === 'sidebar') {
    // The leading markdown cells (title, explanation, parameters) form the sidebar.
    const firstCode = notebook.cells.findIndex((c) => c.cell_type !== 'markdown');
    const split = firstCode < 0 ? cellHtml.length : Math.max(1, firstCode);
    body = `<aside>${cellHtml.slice(0, split).join('\n')}</aside><div class="cells">${cellHtml.slice(split).join('\n')}</div>`;
  } else if (layout === 'tabs') {
    const titles = [...cellHtml.join('\n').matchAll(/data-title="([^"]*)"/g)].map((m) => m[1]);
    const tabs = titles.map((t, i) => `<button role="tab" aria-selected="${i === 0}" data-tab="${i}">${t}</button>`).join('');
    const panels = cellHtml.map((html, i) => (i === 0 ? html : html.replace('<section ', '<section hidden ')));
    body = `<nav class="tabs" role="tablist">${tabs}</nav><div class="cells">${panels.join('\n')}</div>
<script>document.querySelectorAll('.tabs button').forEach(function(b){b.addEventListener('click',function(){var n=+b.dataset.tab;document.querySelectorAll('.tabs button').forEach(function(x,i){x.setAttribute('aria-selected',i===n)});document.querySelectorAll('.cells > .cell').forEach(function(c,i){c.hidden=i!==n})})})</script>`;
  } else {
    body = `<div class="cells">${cellHtml.join('\n')}</div>`;
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(notebook.name)}</title><style>${STYLE}</style></head>
<body class="layout-${layout}"><main>${layout === 'sidebar' ? '' : `<h1 class="title">${escapeHtml(notebook.name)}</h1>`}${body}</main>${options.interactive ? `<script>${APP_FRAME_SCRIPT}</script>` : ''}</body></html>
`;
}

// ---- pipeline ---------------------------------------------------------------------------------

export interface PipelineExportOptions {
  /** Pipeline name; default: the notebook's name made into a valid pipeline name. */
  name?: string;
}

/** `Sales 2025!` → `sales-2025` (lowercase letters, digits, - and _, as pipeline names must be). */
export function pipelineNameOf(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|-+$/g, '')
    .slice(0, 64);
  return PIPELINE_NAME.test(slug) ? slug : 'notebook';
}

/** The notebook id a pipeline names: the path inside the nearest `notebooks/` folder above it, else the file name. */
export function notebookIdOf(source: string): string {
  const parts = resolve(source).split(sep);
  const at = parts.lastIndexOf('notebooks', parts.length - 2);
  return at >= 0 ? parts.slice(at + 1).join('/') : basename(source);
}

/**
 * A platform pipeline (core/pipelines/schemas.ts) whose steps are the notebook's code cells in
 * execution order: each a `notebook` step running its cell, handed the run's input as
 * `pipelineInput`, and waiting (`after`) for the steps of the cells it reads from, so each step runs
 * exactly its own cell and the run record shows the notebook's graph (the cells still take turns on
 * the run's one kernel for the notebook). Step names come from cell
 * names (ids for unnamed cells); the notebook's description (or its markdown) describes the
 * pipeline. The definition names the notebook by its path inside the workspace's `notebooks/`
 * folder, where the server looks for it. Cells with analysis errors refuse the export: a pipeline
 * that cannot run is worse than a clear error now.
 */
export async function pipelineDefinition(
  notebook: Notebook,
  source: string,
  options: PipelineExportOptions = {},
): Promise<PipelineDefinitionInput> {
  const analysis = await analyzeNotebook(notebook.cells);
  const broken = notebook.cells.filter((c) => analysis.cells.get(c.id)!.problems.some((p) => p.severity === 'error'));
  if (broken.length > 0) {
    const first = analysis.cells.get(broken[0].id)!.problems.find((p) => p.severity === 'error')!;
    throw new Error(`cannot export a pipeline: cell ${broken[0].id} has an error: ${first.message}`);
  }
  if (analysis.order.length === 0) throw new Error('cannot export a pipeline: the notebook has no code cells');
  const byId = new Map(notebook.cells.map((c) => [c.id, c]));
  const stepNames = new Map<string, string>();
  const taken = new Set<string>();
  for (const id of analysis.order) {
    const base = stepNameOf(byId.get(id)!.name, id);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base.slice(0, 60)}_${n}`;
    taken.add(name);
    stepNames.set(id, name);
  }
  const metadataDescription = notebook.metadata.description;
  const description =
    typeof metadataDescription === 'string' && metadataDescription
      ? metadataDescription
      : notebook.cells
          .filter((c) => c.cell_type === 'markdown')
          .map((c) => c.source)
          .join('\n\n');
  const notebookId = notebookIdOf(source);
  return {
    name: options.name ?? pipelineNameOf(notebook.name),
    description,
    steps: analysis.order.map((id) => {
      const parents = analysis.order.filter((other) => analysis.topology.parents.get(id)!.has(other));
      return {
        name: stepNames.get(id)!,
        notebook: notebookId,
        cell: id,
        input: '$.input',
        ...(parents.length > 0 ? { after: parents.map((p) => stepNames.get(p)!) } : {}),
      };
    }),
  };
}

/** A step name from a cell name (`revenue by region` → `revenue_by_region`), else from its id. */
function stepNameOf(cellName: string, id: string): string {
  const slug = cellName
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  const name = slug || id;
  return /^[A-Za-z_]/.test(name) ? name.slice(0, 64) : `cell_${name}`.slice(0, 64);
}

// ---- pdf --------------------------------------------------------------------------------------

/**
 * A Chromium/Chrome binary on this machine: `CHROME_PATH`, then the usual names on PATH, then
 * browsers downloaded for Playwright. Undefined when there is none.
 */
export function findChrome(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const variable of ['CHROME_PATH', 'HANGAR_CHROME', 'PUPPETEER_EXECUTABLE_PATH']) {
    const value = env[variable];
    if (value && existsSync(value)) return value;
  }
  const names = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'chrome', 'microsoft-edge'];
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of names) if (existsSync(join(dir, name))) return join(dir, name);
  }
  for (const mac of [
    '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
    '/Applications/Chromium.app/Contents/MacOS/Chromium',
  ]) {
    if (existsSync(mac)) return mac;
  }
  const playwright = join(env.HOME ?? homedir(), '.cache', 'ms-playwright');
  if (existsSync(playwright)) {
    for (const dir of readdirSync(playwright)
      .filter((d) => d.startsWith('chromium'))
      .sort()
      .reverse()) {
      for (const sub of ['chrome-linux/chrome', 'chrome-linux64/chrome', 'chrome-linux/headless_shell']) {
        if (existsSync(join(playwright, dir, sub))) return join(playwright, dir, sub);
      }
    }
  }
  return undefined;
}

export class MissingBrowserError extends Error {
  constructor() {
    super(
      'PDF export needs Chromium or Google Chrome, and none was found. Install one ' +
        '(Debian/Ubuntu: `sudo apt-get install chromium`; macOS: install Google Chrome) or set CHROME_PATH to its binary.',
    );
    this.name = 'MissingBrowserError';
  }
}

/** Print HTML to PDF with headless Chromium. */
export async function htmlToPdf(html: string, output: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const chrome = findChrome(env);
  if (!chrome) throw new MissingBrowserError();
  const dir = join(tmpdir(), `hangar-pdf-${process.pid}-${Date.now()}`);
  await mkdir(dir, { recursive: true });
  const page = join(dir, 'report.html');
  await writeFile(page, html);
  await mkdir(dirname(output), { recursive: true });
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        chrome,
        [
          '--headless=new',
          '--disable-gpu',
          '--no-sandbox',
          '--no-first-run',
          `--user-data-dir=${join(dir, 'profile')}`,
          '--no-pdf-header-footer',
          `--print-to-pdf=${output}`,
          `file://${page}`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('exit', (code) =>
        code === 0 && existsSync(output) ? resolve() : reject(new Error(`${chrome} failed to print (exit ${code}): ${stderr.slice(-500)}`)),
      );
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// ---- docker -----------------------------------------------------------------------------------

/** `@scope/name/sub` or `name/sub` → the package name; undefined for a Node built-in. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0])) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * The packages a bundle imports at run time, read from esbuild's metafile, so the exported
 * package.json lists exactly what the runner needs (a hand-kept list missed `bytes`, a dependency
 * of a module the CLI reaches, and the image failed with ERR_MODULE_NOT_FOUND).
 */
function externalPackages(metafile: Metafile): Set<string> {
  const found = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) {
      if (!imported.external) continue;
      const name = packageOf(imported.path);
      if (name) found.add(name);
    }
  }
  return found;
}

/** Packages the notebook's cells import by name (`npm:` specifiers included). */
async function notebookPackages(notebook: Notebook): Promise<string[]> {
  const analysis = await analyzeNotebook(notebook.cells);
  const names = new Set<string>();
  for (const cell of analysis.cells.values()) {
    for (const what of Object.values(cell.imports ?? {})) {
      const specifier = classifySpecifier(what.slice(0, what.lastIndexOf(' ')));
      if (specifier.kind !== 'package' || specifier.name === 'tslab') continue;
      const name = packageOf(specifier.name);
      if (name) names.add(name);
    }
  }
  return [...names];
}

/**
 * A folder with a Dockerfile, the notebook (as `notebook.nb.ts`), a `package.json` pinning the
 * runtime packages to the versions Hangar uses, and `runner.mjs` — Hangar's notebook CLI bundled
 * into one file — so `docker build` + `docker run` runs the notebook headlessly and exits non-zero
 * when a cell fails.
 */
export async function exportDocker(notebook: Notebook, outDir: string): Promise<string[]> {
  await mkdir(outDir, { recursive: true });
  const here = assetDir();
  // The notebook CLI is a front-end of the composition root (core/app/cli/notebook.ts).
  const cliEntry = join(here, '..', 'app', 'cli', 'notebook.ts');
  if (!existsSync(cliEntry))
    throw new Error("docker export needs Hangar's sources (core/notebook/*.ts, core/app/cli/notebook.ts), which this installation lacks");
  await writeFile(join(outDir, 'notebook.nb.ts'), serializeNbTs(notebook));
  const common = {
    bundle: true,
    platform: 'node' as const,
    format: 'esm' as const,
    target: 'node22',
    packages: 'external' as const,
    logLevel: 'silent' as const,
  };
  const runner = await esbuild().build({
    ...common,
    metafile: true,
    entryPoints: [cliEntry],
    outfile: join(outDir, 'runner.mjs'),
    // The CLI module only exports notebookCli; the runner calls it with the container's arguments.
    footer: { js: 'notebookCli(process.argv.slice(2)).then((code) => process.exit(code));' },
  });
  // The kernel worker and the nbformat schema are files the runner loads from its own folder.
  // CommonJS, for the reason given in core/lib/worker-bundle.ts.
  const worker = await esbuild().build({
    ...common,
    metafile: true,
    format: 'cjs',
    entryPoints: [join(here, 'runtime-worker.ts')],
    outfile: join(outDir, 'runtime-worker.cjs'),
  });
  const rootPackage = JSON.parse(await readFile(join(packageRoot(), 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  const versions = { ...rootPackage.optionalDependencies, ...rootPackage.dependencies };
  const forRunner = new Set([...externalPackages(runner.metafile), ...externalPackages(worker.metafile)]);
  // core/lib/esbuild.ts requires esbuild on first use, by a call the metafile does not list.
  if (Object.keys(runner.metafile.inputs).some((input) => input.endsWith('lib/esbuild.ts'))) forRunner.add('esbuild');
  const unknown = [...forRunner].filter((name) => !versions[name]);
  if (unknown.length > 0) throw new Error(`the notebook runner imports ${unknown.join(', ')}, which Hangar's package.json does not list`);
  // The notebook's own imports too: at Hangar's version when Hangar has the package, else any.
  for (const name of await notebookPackages(notebook)) if (!versions[name]) versions[name] = '*';
  const needed = [...new Set([...forRunner, ...(await notebookPackages(notebook))])].sort();
  await writeFile(
    join(outDir, 'package.json'),
    `${JSON.stringify(
      {
        name: `notebook-${notebook.name}`.toLowerCase().replace(/[^a-z0-9-]/g, '-'),
        private: true,
        type: 'module',
        dependencies: Object.fromEntries(needed.map((name) => [name, versions[name]])),
      },
      null,
      2,
    )}\n`,
  );
  await copyFile(join(here, 'nbformat.v4.schema.json'), join(outDir, 'nbformat.v4.schema.json'));
  await copyFile(join(here, 'NBFORMAT-LICENSE'), join(outDir, 'NBFORMAT-LICENSE'));
  await writeFile(
    join(outDir, 'Dockerfile'),
    `# Runs the notebook "${notebook.name}" headlessly; exits non-zero if a cell fails.
FROM node:24-slim
WORKDIR /app
COPY package.json ./
RUN npm install --omit=dev --no-audit --no-fund
COPY . .
CMD ["node", "runner.mjs", "run", "notebook.nb.ts"]
`,
  );
  await writeFile(join(outDir, '.dockerignore'), 'node_modules\n');
  return [
    'Dockerfile',
    '.dockerignore',
    'package.json',
    'notebook.nb.ts',
    'runner.mjs',
    'runtime-worker.cjs',
    'nbformat.v4.schema.json',
    'NBFORMAT-LICENSE',
  ];
}
