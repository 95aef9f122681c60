/**
 * Jupyter habits (#23): notebooks written for Deno's Jupyter kernel and for tslab run unchanged,
 * `npm:` imports resolve from the notebook folder's packages, `jsr:` and URL imports are refused
 * with the reason and what to do, a missing package says how to install it, and the same import
 * in two cells is no conflict.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readNotebookFile } from '../../core/notebook/formats.js';
import { Notebook } from '../../core/notebook/schemas.js';
import { runNotebook } from '../../core/notebook/service.js';
import { NotebookSession } from '../../core/notebook/session.js';

let folder = '';
const sessions: NotebookSession[] = [];

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'nb-habits-'));
  const pkg = join(folder, 'node_modules', 'tiny-greeter');
  await mkdir(pkg, { recursive: true });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'tiny-greeter', version: '1.2.0', main: 'index.js' }));
  await writeFile(join(pkg, 'index.js'), 'exports.greet = (name) => `hello ${name}`;\n');
  await writeFile(join(folder, 'dot.png'), Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'));
});

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

async function run(sources: string[]) {
  const cells = sources.map((source, i) => ({ id: `cell${String(i).padStart(4, '0')}`, source }));
  const session = new NotebookSession(Notebook.parse({ name: 't', cells }), { filePath: join(folder, 't.nb.ts') });
  sessions.push(session);
  await session.runAll();
  return session.cellsWithState();
}

const text = (cell: { outputs: Array<Record<string, unknown>> }) => JSON.stringify(cell.outputs);

describe("Deno's Jupyter kernel", () => {
  it('Deno.jupyter display, html, md, svg, image and format produce the MIME bundles Deno would', async () => {
    const [a, b, c, d] = await run([
      'Deno.jupyter.display({ "text/html": "<b>raw</b>" }, { raw: true });\nDeno.jupyter.display(Deno.jupyter.md`# Title`)',
      'const who = "world";\nDeno.jupyter.html`<i>hi ${who}</i>`',
      'Deno.jupyter.svg`<svg xmlns="http://www.w3.org/2000/svg"></svg>`',
      'const f = Deno.jupyter.format(Deno.jupyter.image("dot.png"));\nObject.keys(f)',
    ]);
    expect(a.state).toBe('success');
    expect(a.outputs).toEqual([
      { output_type: 'display_data', data: { 'text/html': '<b>raw</b>' }, metadata: {} },
      { output_type: 'display_data', data: { 'text/markdown': '# Title' }, metadata: {} },
    ]);
    expect(b.outputs[0]).toMatchObject({ output_type: 'execute_result', data: { 'text/html': '<i>hi world</i>' } });
    expect(Object.keys((c.outputs[0] as { data: object }).data)).toEqual(['image/svg+xml']);
    expect(text(d)).toContain('image/png');
  });

  it('Deno file calls read relative to the notebook, and an unsupported Deno API says what to use instead', async () => {
    await writeFile(join(folder, 'note.txt'), 'from disk');
    const [read, other] = await run(['await Deno.readTextFile("note.txt")', 'Deno.serve(() => new Response("x"))']);
    expect(text(read)).toContain('from disk');
    expect(other.state).toBe('error');
    expect(text(other)).toMatch(/Deno\.serve is not available.*node:/);
  });

  it('runs the Deno fixture notebook headlessly end to end', async () => {
    const notebook = await readNotebookFile(resolve(import.meta.dirname, '..', 'fixtures', 'notebooks', 'deno-basics.ipynb'));
    const result = await runNotebook(notebook);
    expect(result.ok).toBe(true);
    expect(JSON.stringify(result.cells[2].outputs)).toContain('total is 5');
  });
});

describe('tslab', () => {
  it('tslab.display shows HTML, markdown and images', async () => {
    const [cell] = await run(['import * as tslab from "tslab";\ntslab.display.html("<p>t</p>");\ntslab.display.markdown("**m**")']);
    expect(cell.state).toBe('success');
    expect(cell.outputs.map((o) => Object.keys((o as { data: object }).data)[0])).toEqual(['text/html', 'text/markdown']);
  });

  it('Node built-ins imported by their bare names, as tslab notebooks do, are the built-ins', async () => {
    const [cell] = await run([
      'import { createHash } from "crypto";\nimport * as fs from "fs";\ncreateHash("sha256").update("x").digest("hex").slice(0, 8) + String(typeof fs.readFileSync)',
    ]);
    expect(cell.state).toBe('success');
    expect(text(cell)).toContain('2d711642function');
  });
});

describe('import specifiers', () => {
  it('npm:pkg@version resolves from the notebook folder', async () => {
    const [cell] = await run(['import { greet } from "npm:tiny-greeter@1.2.0";\ngreet("ada")']);
    expect(cell.state).toBe('success');
    expect(text(cell)).toContain('hello ada');
  });

  it('a missing package says which npm install to run, and where, without internal paths', async () => {
    const [npm, bare] = await run(['import x from "npm:not-installed-pkg@2.1.0";', 'import y from "also-not-installed";']);
    expect(npm.state).toBe('error');
    expect(text(npm)).toContain('npm install not-installed-pkg@2.1.0');
    expect(text(npm)).toContain(folder);
    expect(text(bare)).toContain('npm install also-not-installed');
    for (const cell of [npm, bare]) expect(text(cell)).not.toMatch(/runtime-worker|\.cjs|\.mjs|worker-bundle/);
  });

  it('jsr: and https: imports are refused with the reason and what to do', async () => {
    const [jsr, url] = await run(['import { join } from "jsr:@std/path@1";', 'import * as x from "https://deno.land/std/path/mod.ts";']);
    expect(text(jsr)).toMatch(/offline.*npx jsr add @std\/path/);
    expect(text(url)).toMatch(/does not fetch code from the network.*relative path/);
  });
});

describe('redefinition', () => {
  it('the same import in two cells is no conflict, and both cells run', async () => {
    const cells = await run([
      'import { greet } from "tiny-greeter";\ngreet("a")',
      'import { greet } from "tiny-greeter";\ngreet("b")',
      'greet("c")',
    ]);
    expect(cells.map((c) => c.state)).toEqual(['success', 'success', 'success']);
    expect(text(cells[2])).toContain('hello c');
  });

  it('defining the same variable in two cells stays an error naming the other cell (marimo)', async () => {
    const cells = await run(['const x = 1', 'const x = 2']);
    expect(cells.map((c) => c.state)).toEqual(['error', 'error']);
    expect(text(cells[1])).toContain('also defined by cell cell0000');
  });
});
