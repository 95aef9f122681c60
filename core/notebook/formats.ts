/**
 * The two notebook file formats and conversion between them.
 *
 * ## `*.nb.ts` — a valid TypeScript file that diffs well
 * ```ts
 * // @hangar-notebook {"name":"sales","created_at":"2026-01-01T00:00:00.000Z","metadata":{}}
 *
 * // %% [markdown] id=k3j9a0qz name="intro"
 * // # Sales
 *
 * // %% [code] id=a81mz0c2 name="load"
 * const rows = await loadCsv('sales.csv');
 * ```
 * - Line 1 is the header: notebook name, creation time and metadata as one-line JSON.
 * - One marker per cell: `// %% [code|markdown|raw] id=<id>` then optional `name="<JSON string>"`
 *   and `metadata=<one-line JSON>`. Code cells follow verbatim; markdown and raw cells are line
 *   comments (`// ` prefix, `//` for an empty line) so the file stays valid TypeScript.
 * - Cells are separated by one blank line. A source line that itself starts like a marker
 *   (`// %% [`) is written with one more `%` and read back with one less, so any source
 *   round-trips exactly.
 * - Outputs, execution counts and run times are not in the file: they belong to a run, not to the
 *   code (like jupytext and marimo files). `readNotebookFile`/`writeNotebookFile` keep them in a
 *   sidecar, `.<name>.outputs.json` (outputs-sidecar.ts), so `.ipynb → .nb.ts → .ipynb` loses
 *   nothing. Cells get the header's `created_at` unless the sidecar says otherwise.
 *
 * ## `.ipynb` — nbformat 4.5
 * The source's kernelspec and language_info kept (a TypeScript one when it has none), outputs
 * kept, our own fields in `metadata.hangar` (notebook name; per cell `name`, `created_at`,
 * `last_executed`). A notebook Jupyter wrote has no cell dates: reading its file gives them the
 * file's modification time, the one date it has. JSON is written the way Jupyter writes it
 * (sorted keys, one-space indent, trailing newline) so a Jupyter save produces no diff noise.
 *
 * Both writers are deterministic: converting either way and back gives the same ids, names, types
 * and sources, and a second round trip is byte-identical to the first.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type * as Acorn from 'acorn';
import type * as AjvPackage from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { packageOnFirstUse } from '../lib/on-first-use.js';
import { assetDir } from './assets.js';
import { applySidecar, readSidecar, writeSidecar } from './outputs-sidecar.js';
import { CellType, Notebook, type Output } from './schemas.js';

/** A file that cannot be read as a notebook; the message names the file and, when known, the line. */
export class NotebookFormatError extends Error {
  constructor(
    readonly file: string,
    readonly detail: string,
    readonly line?: number,
  ) {
    super(`${file}${line ? `:${line}` : ''}: ${detail}`);
    this.name = 'NotebookFormatError';
  }
}

export type NotebookFormat = 'nb.ts' | 'ipynb';

export function formatOf(file: string): NotebookFormat {
  if (file.endsWith('.ipynb')) return 'ipynb';
  if (file.endsWith('.ts')) return 'nb.ts';
  throw new NotebookFormatError(file, 'unknown notebook format: expected a .nb.ts or .ipynb file');
}

/** `sales.nb.ts` ↔ `sales.ipynb`, in the same folder. */
export function convertedPath(file: string): string {
  if (file.endsWith('.ipynb')) return `${file.slice(0, -'.ipynb'.length)}.nb.ts`;
  if (file.endsWith('.nb.ts')) return `${file.slice(0, -'.nb.ts'.length)}.ipynb`;
  if (file.endsWith('.ts')) return `${file.slice(0, -'.ts'.length)}.ipynb`;
  throw new NotebookFormatError(file, 'cannot derive an output name: expected a .nb.ts or .ipynb file');
}

/** Notebook name from a file name: `reports/sales.nb.ts` → `sales`. */
export function nameFromPath(file: string): string {
  return basename(file).replace(/\.nb\.ts$|\.ipynb$|\.ts$/, '') || 'untitled';
}

const EPOCH = '1970-01-01T00:00:00.000Z';

// ---- *.nb.ts ---------------------------------------------------------------------------------

const HEADER = '// @hangar-notebook ';
const MARKER = /^\/\/ %% \[([a-z]+)\] id=(\S+)(?: name=("(?:[^"\\]|\\.)*"))?(?: metadata=(\{.*\}))?$/;
const LOOKS_LIKE_MARKER = /^\/\/ %%+ \[/;

const escapeLine = (line: string) => (LOOKS_LIKE_MARKER.test(line) ? line.replace('// %', '// %%') : line);
const unescapeLine = (line: string) => (/^\/\/ %%%+ \[/.test(line) ? line.replace('// %%', '// %') : line);

/** The header's date: the first cell's (the notebook's creation, as far as the file can tell). */
const headerCreatedAt = (notebook: Notebook) => notebook.cells[0]?.created_at ?? EPOCH;

export function serializeNbTs(notebook: Notebook): string {
  const header = {
    name: notebook.name,
    created_at: headerCreatedAt(notebook),
    metadata: notebook.metadata,
  };
  const blocks = notebook.cells.map((cell) => {
    let marker = `// %% [${cell.cell_type}] id=${cell.id}`;
    if (cell.name) marker += ` name=${JSON.stringify(cell.name)}`;
    if (Object.keys(cell.metadata).length > 0) marker += ` metadata=${JSON.stringify(cell.metadata)}`;
    const lines = cell.source.split('\n');
    const body = cell.cell_type === 'code' ? lines : lines.map((l) => (l === '' ? '//' : `// ${l}`));
    return `${marker}\n${body.map(escapeLine).join('\n')}\n`;
  });
  return `${HEADER}${JSON.stringify(header)}\n\n${blocks.join('\n')}`;
}

export function parseNbTs(text: string, file = 'notebook.nb.ts'): Notebook {
  const lines = text.split('\n');
  let header: { name?: unknown; created_at?: unknown; metadata?: unknown } = {};
  let start = 0;
  if (lines[0]?.startsWith(HEADER)) {
    try {
      header = JSON.parse(lines[0].slice(HEADER.length));
    } catch (err) {
      throw new NotebookFormatError(file, `header is not valid JSON: ${(err as Error).message}`, 1);
    }
    start = 1;
  }
  const createdAt = typeof header.created_at === 'string' ? header.created_at : EPOCH;
  const cells: Array<Record<string, unknown>> = [];
  let current: { raw: Record<string, unknown>; body: string[]; line: number } | undefined;
  const finish = () => {
    if (!current) return;
    const body = current.body;
    // Each cell ends with "\n" and is followed by one blank line (or the end of the file), which
    // leaves exactly one extra empty entry after splitting. A hand-edited file may lack it.
    if (body[body.length - 1] === '') body.pop();
    const type = current.raw.cell_type;
    const sourceLines = body.map(unescapeLine).map((line, i) => {
      if (type === 'code') return line;
      if (line === '//') return '';
      if (line.startsWith('// ')) return line.slice(3);
      throw new NotebookFormatError(file, `${type} cell lines must start with "// "`, current!.line + 1 + i);
    });
    cells.push({ ...current.raw, source: sourceLines.join('\n') });
  };
  for (let i = start; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('// %% [')) {
      const match = MARKER.exec(line);
      if (!match) {
        throw new NotebookFormatError(file, 'malformed cell marker; expected `// %% [code|markdown|raw] id=<id> name="..."`', i + 1);
      }
      finish();
      const [, type, id, name, metadata] = match;
      if (!CellType.safeParse(type).success) {
        throw new NotebookFormatError(file, `unknown cell type "${type}" (expected code, markdown or raw)`, i + 1);
      }
      const raw: Record<string, unknown> = { id, cell_type: type, name: '', created_at: createdAt };
      try {
        if (name) raw.name = JSON.parse(name);
        if (metadata) raw.metadata = JSON.parse(metadata);
      } catch (err) {
        throw new NotebookFormatError(file, `cell marker has invalid JSON: ${(err as Error).message}`, i + 1);
      }
      current = { raw, body: [], line: i + 1 };
    } else if (current) {
      current.body.push(line);
    } else if (line.trim() !== '') {
      throw new NotebookFormatError(file, 'text before the first cell marker (`// %% [code] id=...`)', i + 1);
    }
  }
  finish();
  return toNotebook(
    { name: typeof header.name === 'string' ? header.name : nameFromPath(file), metadata: header.metadata ?? {}, cells },
    file,
  );
}

function toNotebook(raw: unknown, file: string): Notebook {
  const result = Notebook.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new NotebookFormatError(file, `${issue.path.join('.') || 'notebook'}: ${issue.message}`);
  }
  const seen = new Set<string>();
  for (const cell of result.data.cells) {
    if (seen.has(cell.id)) throw new NotebookFormatError(file, `cell id "${cell.id}" appears twice`);
    seen.add(cell.id);
  }
  return result.data;
}

// ---- .ipynb -----------------------------------------------------------------------------------

let validator: ValidateFunction | undefined;
// Loaded by the first .ipynb checked and the first JSON error located (core/lib/on-first-use.ts).
const ajvPackage = packageOnFirstUse<typeof AjvPackage>('ajv');
const acorn = packageOnFirstUse<typeof Acorn>('acorn');

/** Validate an nbformat document against the shipped v4.5 schema; returns readable errors. */
export function validateIpynb(document: unknown): string[] {
  if (!validator) {
    const schema = JSON.parse(readFileSync(join(assetDir(), 'nbformat.v4.schema.json'), 'utf8')) as object;
    // strict: false — the upstream schema carries a few descriptive keys Ajv's strict mode rejects.
    validator = new (ajvPackage().Ajv)({ strict: false, allErrors: false }).compile(schema);
  }
  if (validator(document)) return [];
  return (validator.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
}

export const TYPESCRIPT_KERNELSPEC = { name: 'hangar-typescript', display_name: 'TypeScript (Hangar)', language: 'typescript' };
const LANGUAGE_INFO = { name: 'typescript', file_extension: '.ts', mimetype: 'text/typescript' };

/** Jupyter stores text as arrays of lines, each keeping its "\n". */
function toLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  return lines.map((line, i) => (i < lines.length - 1 ? `${line}\n` : line)).filter((line) => line !== '');
}

const isTextMime = (mime: string) => mime.startsWith('text/') || mime === 'image/svg+xml';

function outputToIpynb(output: Output): Record<string, unknown> {
  switch (output.output_type) {
    case 'stream':
      return { ...output, text: toLines(output.text) };
    case 'display_data':
    case 'execute_result': {
      const data: Record<string, unknown> = {};
      for (const [mime, value] of Object.entries(output.data)) {
        data[mime] = isTextMime(mime) && typeof value === 'string' ? toLines(value) : value;
      }
      return { ...output, data };
    }
    case 'error':
      return output;
    default: {
      const never: never = output;
      return never;
    }
  }
}

/** JSON with sorted keys, as Jupyter's `json.dumps(sort_keys=True, indent=1)` writes it. */
function stableJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return `${JSON.stringify(sort(value), null, 1)}\n`;
}

export function toIpynbDocument(notebook: Notebook): Record<string, unknown> {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: TYPESCRIPT_KERNELSPEC,
      language_info: LANGUAGE_INFO,
      ...notebook.metadata,
      hangar: { name: notebook.name },
    },
    cells: notebook.cells.map((cell) => {
      const hangar: Record<string, unknown> = { created_at: cell.created_at };
      if (cell.name) hangar.name = cell.name;
      if (cell.last_executed) hangar.last_executed = cell.last_executed;
      const base = { id: cell.id, cell_type: cell.cell_type, metadata: { ...cell.metadata, hangar }, source: toLines(cell.source) };
      if (cell.cell_type !== 'code') return base;
      return { ...base, execution_count: cell.execution_count || null, outputs: cell.outputs.map(outputToIpynb) };
    }),
  };
}

export function serializeIpynb(notebook: Notebook): string {
  return stableJson(toIpynbDocument(notebook));
}

/** Line of a JSON.parse error, from the "at position N" (Node 20) or "line N" (Node 22) text. */
function jsonErrorLine(text: string, err: Error): number | undefined {
  const line = /line (\d+)/.exec(err.message);
  if (line) return Number(line[1]);
  const position = /position (\d+)/.exec(err.message);
  if (position) return text.slice(0, Number(position[1])).split('\n').length;
  // Node 20 often gives only a snippet; JSON is a JavaScript expression, so acorn can locate most
  // errors. Accepted gap: mistakes JavaScript allows (a trailing comma, a bare word) get no line.
  try {
    acorn().parseExpressionAt(text, 0, { ecmaVersion: 'latest', locations: true });
  } catch (parseError) {
    return (parseError as { loc?: { line: number } }).loc?.line;
  }
  return undefined;
}

/** Same JSON whatever the key order (Jupyter writes keys sorted). */
const sameJson = (a: unknown, b: unknown) => stableJson(a) === stableJson(b);

export function parseIpynb(text: string, file = 'notebook.ipynb', options: { createdAt?: string } = {}): Notebook {
  let document: Record<string, unknown>;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new NotebookFormatError(file, `not valid JSON: ${(err as Error).message.split('\n')[0]}`, jsonErrorLine(text, err as Error));
  }
  if (!document || typeof document !== 'object' || document.nbformat !== 4) {
    throw new NotebookFormatError(file, `only nbformat 4 notebooks are supported (found nbformat ${String(document?.nbformat)})`);
  }
  const rawCells = Array.isArray(document.cells) ? (document.cells as Array<Record<string, unknown>>) : [];
  const { hangar: notebookHangar, ...metadata } = (document.metadata ?? {}) as Record<string, unknown>;
  // Our own kernelspec is implied (the writer adds it); another kernel's is the source's and is kept.
  if (sameJson(metadata.kernelspec, TYPESCRIPT_KERNELSPEC)) delete metadata.kernelspec;
  if (sameJson(metadata.language_info, LANGUAGE_INFO)) delete metadata.language_info;
  const fallbackDate = options.createdAt ?? EPOCH;
  const cells = rawCells.map((raw, index) => {
    const { hangar, ...cellMetadata } = (raw.metadata ?? {}) as Record<string, unknown>;
    const ours = (hangar ?? {}) as Record<string, unknown>;
    const source = Array.isArray(raw.source) ? raw.source.join('') : String(raw.source ?? '');
    return {
      // nbformat < 4.5 has no ids: derive one from the position so repeated conversions agree.
      id: typeof raw.id === 'string' ? raw.id : `cell${String(index).padStart(4, '0')}`,
      cell_type: raw.cell_type,
      name: typeof ours.name === 'string' ? ours.name : typeof cellMetadata.name === 'string' ? cellMetadata.name : '',
      source,
      outputs: raw.cell_type === 'code' ? (raw.outputs ?? []) : [],
      execution_count: typeof raw.execution_count === 'number' ? raw.execution_count : 0,
      metadata: cellMetadata,
      created_at: typeof ours.created_at === 'string' ? ours.created_at : fallbackDate,
      last_executed: typeof ours.last_executed === 'string' ? ours.last_executed : null,
    };
  });
  const name = (notebookHangar as { name?: unknown } | undefined)?.name;
  return toNotebook({ name: typeof name === 'string' ? name : nameFromPath(file), metadata, cells }, file);
}

// ---- files ------------------------------------------------------------------------------------

export function parseNotebook(text: string, file: string, options: { createdAt?: string } = {}): Notebook {
  return formatOf(file) === 'ipynb' ? parseIpynb(text, file, options) : parseNbTs(text, file);
}

export function serializeNotebook(notebook: Notebook, file: string): string {
  return formatOf(file) === 'ipynb' ? serializeIpynb(notebook) : serializeNbTs(notebook);
}

export async function readNotebookFile(file: string): Promise<Notebook> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new NotebookFormatError(file, (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message);
  }
  const modified = await stat(file).then(
    (s) => s.mtime.toISOString(),
    () => undefined,
  );
  const notebook = parseNotebook(text, file, modified ? { createdAt: modified } : {});
  if (formatOf(file) === 'nb.ts') applySidecar(notebook.cells, await readSidecar(file));
  return { ...notebook, file_path: file };
}

/** Write atomically (temp file + rename) so a crash never leaves half a notebook on disk. */
export async function writeNotebookFile(notebook: Notebook, file: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, serializeNotebook(notebook, file));
  await rename(tmp, file);
  if (formatOf(file) === 'nb.ts') await writeSidecar(notebook, file, headerCreatedAt(notebook));
}

export const isNotebookFile = (file: string) => file.endsWith('.nb.ts') || extname(file) === '.ipynb';
