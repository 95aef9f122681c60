/**
 * Outputs of a `*.nb.ts` notebook, kept beside it in `.<name>.outputs.json`.
 *
 * Why a sidecar: the `.nb.ts` file is code that diffs well (as jupytext's and marimo's files are),
 * so outputs stay out of it; but a Jupyter user converting `.ipynb → .nb.ts → .ipynb` expects to
 * get their outputs, execution counts and per-cell dates back. The sidecar is a dot-file so the
 * notebook list and drop-in discovery skip it, and a project may `.gitignore` it (marimo does the
 * same with `__marimo__/session/*.json`).
 *
 * Each entry carries a hash of the cell's source when the outputs were made. An entry whose cell
 * is gone, or whose source changed since (an edit in another editor), is dropped on reading: its
 * outputs belong to code that no longer exists. Reading never fails a notebook: a damaged sidecar
 * is ignored, as a cache would be.
 */
import { createHash } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { type Cell, type Notebook, Output } from './schemas.js';

/** `reports/sales.nb.ts` → `reports/.sales.outputs.json`. */
export function sidecarPath(file: string): string {
  const stem = basename(file).replace(/\.nb\.ts$|\.ts$/, '');
  return join(dirname(file), `.${stem}.outputs.json`);
}

export const sourceHash = (source: string) => createHash('sha256').update(source).digest('hex').slice(0, 16);

const Entry = z.object({
  source_hash: z.string(),
  execution_count: z.number().int().min(0).default(0),
  outputs: z.array(Output).default([]),
  created_at: z.string().optional(),
  last_executed: z.string().nullable().default(null),
});
const Sidecar = z.object({ version: z.literal(1), cells: z.record(z.string(), Entry) });

/** What the sidecar holds for a notebook; undefined when there is nothing run-specific to keep. */
export function sidecarFor(notebook: Notebook, headerCreatedAt: string): z.input<typeof Sidecar> | undefined {
  const cells: Record<string, z.input<typeof Entry>> = {};
  for (const cell of notebook.cells) {
    const ran = cell.outputs.length > 0 || cell.execution_count > 0 || cell.last_executed;
    const ownDate = cell.created_at !== headerCreatedAt;
    if (!ran && !ownDate) continue;
    cells[cell.id] = {
      source_hash: sourceHash(cell.source),
      execution_count: cell.execution_count,
      outputs: cell.outputs,
      ...(ownDate ? { created_at: cell.created_at } : {}),
      last_executed: cell.last_executed,
    };
  }
  return Object.keys(cells).length > 0 ? { version: 1, cells } : undefined;
}

/** Put the sidecar's outputs back on the cells they belong to (same id, same source). */
export function applySidecar(cells: Cell[], text: string | undefined): void {
  if (text === undefined) return;
  let parsed: z.infer<typeof Sidecar>;
  try {
    parsed = Sidecar.parse(JSON.parse(text));
  } catch {
    return;
  }
  for (const cell of cells) {
    const entry = parsed.cells[cell.id];
    if (!entry) continue;
    if (entry.created_at) cell.created_at = entry.created_at;
    if (entry.source_hash !== sourceHash(cell.source)) continue;
    cell.outputs = entry.outputs;
    cell.execution_count = entry.execution_count;
    cell.last_executed = entry.last_executed;
  }
}

export async function readSidecar(file: string): Promise<string | undefined> {
  return readFile(sidecarPath(file), 'utf8').catch(() => undefined);
}

/** Write (atomically) or remove the sidecar so it never describes outputs the notebook no longer has. */
export async function writeSidecar(notebook: Notebook, file: string, headerCreatedAt: string): Promise<void> {
  const target = sidecarPath(file);
  const content = sidecarFor(notebook, headerCreatedAt);
  if (!content) {
    await rm(target, { force: true });
    return;
  }
  const tmp = `${target}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(content, null, 1)}\n`);
  await rename(tmp, target);
}
