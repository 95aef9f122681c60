/**
 * Outputs kept (#23): `.ipynb → .nb.ts → .ipynb` keeps outputs, execution counts, kernelspec and
 * metadata (the `.nb.ts` keeps them in its `.<name>.outputs.json` sidecar); converted notebooks keep
 * the source's date; outputs from an earlier run are marked stale in the CLI, the API and exports.
 */
import { copyFile, mkdtemp, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, notebookCli } from '../../core/app/cli/notebook.js';
import { readNotebookFile } from '../../core/notebook/formats.js';
import { NotebookService } from '../../core/notebook/service.js';

const fixture = resolve(import.meta.dirname, '..', 'fixtures', 'notebooks', 'deno-basics.ipynb');
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nb-outputs-'));
});

async function cli(args: string[]) {
  const io = { stdout: '', stderr: '' };
  const sink: CliIo = { out: (t) => (io.stdout += t), err: (t) => (io.stderr += t), color: false };
  const code = await notebookCli(args, sink);
  return { code, ...io };
}

describe('ipynb → nb.ts → ipynb', () => {
  it('keeps outputs, execution counts, kernelspec and metadata, through the sidecar', async () => {
    const source = join(dir, 'deno.ipynb');
    await copyFile(fixture, source);
    const middle = join(dir, 'deno.nb.ts');
    expect((await cli(['convert', source, '-o', middle])).code).toBe(0);
    const sidecar = JSON.parse(await readFile(join(dir, '.deno.outputs.json'), 'utf8'));
    expect(sidecar.cells.e5f6a7b8.execution_count).toBe(3);
    expect(await readFile(middle, 'utf8')).not.toContain('total is 5'); // outputs stay out of the code file
    const back = join(dir, 'back.ipynb');
    expect((await cli(['convert', middle, '-o', back])).code).toBe(0);
    const original = JSON.parse(await readFile(fixture, 'utf8'));
    const result = JSON.parse(await readFile(back, 'utf8'));
    expect(result.metadata.kernelspec).toEqual(original.metadata.kernelspec);
    expect(result.metadata.language_info).toEqual(original.metadata.language_info);
    for (const [i, cell] of original.cells.entries()) {
      expect(result.cells[i].source).toEqual(cell.source);
      if (cell.cell_type !== 'code') continue;
      expect(result.cells[i].execution_count).toBe(cell.execution_count);
      expect(result.cells[i].outputs).toEqual(cell.outputs);
    }
  });

  it("gives a Jupyter notebook's cells the file's date, not 1970", async () => {
    const source = join(dir, 'dated.ipynb');
    await copyFile(fixture, source);
    const when = new Date('2024-05-06T07:08:09.000Z');
    await utimes(source, when, when);
    const notebook = await readNotebookFile(source);
    expect(notebook.cells.map((c) => c.created_at)).toEqual(notebook.cells.map(() => when.toISOString()));
    const converted = join(dir, 'dated.nb.ts');
    expect((await cli(['convert', source, '-o', converted])).code).toBe(0);
    expect(await readFile(converted, 'utf8')).toContain('"created_at":"2024-05-06T07:08:09.000Z"');
  });

  it('drops a sidecar entry whose cell source changed on disk since its outputs were made', async () => {
    const source = join(dir, 'edited.ipynb');
    await copyFile(fixture, source);
    const nbTs = join(dir, 'edited.nb.ts');
    await cli(['convert', source, '-o', nbTs]);
    await writeFile(nbTs, (await readFile(nbTs, 'utf8')).replace('2 + 3', '2 + 4'));
    const notebook = await readNotebookFile(nbTs);
    expect(notebook.cells.find((c) => c.id === 'e5f6a7b8')!.outputs).toEqual([]);
    expect(notebook.cells.find((c) => c.id === 'c9d0e1f2')!.execution_count).toBe(4);
  });
});

describe('outputs from an earlier run are stale until re-run', () => {
  it('the session marks them, and a run clears the mark', async () => {
    const root = await mkdtemp(join(tmpdir(), 'nb-stale-'));
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(root, 'notebooks'));
    await copyFile(fixture, join(root, 'notebooks', 'deno.ipynb'));
    const service = new NotebookService({ root });
    try {
      const session = await service.open('deno.ipynb');
      const before = session.cellsWithState().find((c) => c.id === 'e5f6a7b8')!;
      expect(before).toMatchObject({ state: 'stale', stale_outputs: true });
      await session.runCell('e5f6a7b8');
      const after = session.cellsWithState().find((c) => c.id === 'e5f6a7b8')!;
      expect(after).toMatchObject({ state: 'success', stale_outputs: false });
    } finally {
      await service.closeAll();
    }
  });

  it('notebook run labels the old outputs of a cell that could not run', async () => {
    const source = join(dir, 'blocked.ipynb');
    const doc = JSON.parse(await readFile(fixture, 'utf8'));
    doc.cells[1].source = ['const total: number = (() => { throw new Error("boom"); })();\n', 'total'];
    await writeFile(source, JSON.stringify(doc));
    const r = await cli(['run', source]);
    expect(r.code).toBe(1);
    const downstream = r.stdout.slice(r.stdout.indexOf('── c9d0e1f2'));
    expect(downstream).toMatch(/not run\n\(stale: outputs from an earlier run\)\ntotal is 5/);
  });

  it('an HTML export without a run marks every saved output stale and stars its count', async () => {
    const source = join(dir, 'report.ipynb');
    await copyFile(fixture, source);
    const target = join(dir, 'report.html');
    expect((await cli(['export', source, '--format', 'html', '--no-run', '-o', target])).code).toBe(0);
    const page = await readFile(target, 'utf8');
    expect(page.match(/class="stale-note"/g)).toHaveLength(2);
    expect(page).toContain('[3*]');
    expect((await stat(target)).size).toBeGreaterThan(0);
  });

  it('an HTML export after a run shows fresh outputs without the mark', async () => {
    const source = join(dir, 'fresh.ipynb');
    await copyFile(fixture, source);
    const target = join(dir, 'fresh.html');
    expect((await cli(['export', source, '--format', 'html', '-o', target])).code).toBe(0);
    const page = await readFile(target, 'utf8');
    expect(page).not.toContain('class="stale-note"');
    expect(page).toContain('total is 5');
  });
});
