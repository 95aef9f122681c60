/**
 * #23: a Jupyter habit the reactive notebook refuses (a name defined by two cells, a cell assigning
 * another cell's name) comes with marimo's one-click fix: the problem lists its fixes, and
 * `POST /api/notebooks/:nb/cells/:cell/fix` applies one (rename / merge / delete) and runs what is
 * stale. A fix that cannot be applied safely is refused with {detail}, changing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renameInSource } from '../../core/notebook/fixes.js';
import { startTestServer, type TestServer } from '../support/server.js';

const nb = (cells: Array<[string, string]>) => cells.map(([id, source]) => `// %% [code] id=${id}\n${source}\n`).join('');

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    files: {
      'notebooks/twice.nb.ts': nb([
        ['first001', 'const total = 10'],
        ['before01', 'total + 1'],
        ['second01', 'const total: number = 20\nconst box = { total }'],
        ['after001', 'total * 2'],
      ]),
      'notebooks/reassign.nb.ts': nb([
        ['load0001', 'let df = [3, 1, 2]'],
        ['clean001', 'df = df.filter((v) => v > 1)'],
        ['count001', 'df.length'],
      ]),
      'notebooks/consts.nb.ts': nb([
        ['one00001', 'const x = 1'],
        ['two00001', 'const x = 2'],
        ['use00001', 'x + 1'],
      ]),
      'notebooks/shadow.nb.ts': nb([
        ['one00001', 'const y = 1'],
        ['two00001', 'const y = 2\nfunction f(y) { return y }'],
      ]),
    },
    settings: { watch: false },
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

type Cell = { id: string; source: string; state: string; outputs: Array<{ data?: Record<string, unknown> }> };
const result = (cell: Cell | undefined) => cell?.outputs.find((o) => o.data)?.data?.['text/plain'];
const fix = (notebook: string, cell: string, json: unknown) =>
  server.request(`/api/notebooks/${notebook}/cells/${cell}/fix`, { method: 'POST', json });

describe('one-click fixes for a name defined twice', () => {
  it('the later definition offers rename, merge and delete; the first only the error', async () => {
    const deps = await server.request('/api/notebooks/twice.nb.ts/dependencies');
    expect(deps.status).toBe(200);
    const problems = (id: string) => deps.body.cells.find((c: { id: string }) => c.id === id).problems;
    expect(problems('second01')).toEqual([
      expect.objectContaining({
        kind: 'multiple-definitions',
        name: 'total',
        fixes: [
          { action: 'rename', label: "Rename this cell's `total` to `total_2` (and its uses below)", to: 'total_2' },
          { action: 'merge', label: 'Merge into cell first001', into: 'first001' },
          { action: 'delete', label: 'Delete this cell' },
        ],
      }),
    ]);
    expect(problems('first001')).toEqual([expect.objectContaining({ kind: 'multiple-definitions', name: 'total' })]);
    expect(problems('first001')[0].fixes).toBeUndefined();
  });

  it('rename edits the cell (TypeScript, a shorthand key) and the cells below that read it, then the notebook runs', async () => {
    const res = await fix('twice.nb.ts', 'second01', { name: 'total', action: 'rename' });
    expect(res.status).toBe(200);
    const cells = res.body.cells as Cell[];
    const byId = (id: string) => cells.find((c) => c.id === id);
    expect(byId('second01')!.source).toBe('const total_2: number = 20\nconst box = { total: total_2 }');
    // Cells below saw the second definition in Jupyter; cells above keep the first.
    expect(byId('after001')!.source).toBe('total_2 * 2');
    expect(byId('before01')!.source).toBe('total + 1');
    expect(cells.map((c) => c.state)).toEqual(['success', 'success', 'success', 'success']);
    expect(result(byId('before01'))).toBe('11');
    expect(result(byId('after001'))).toBe('40');
  });

  it('merge is refused when the merged cell would not run, and changes nothing', async () => {
    const res = await fix('consts.nb.ts', 'two00001', { name: 'x', action: 'merge' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/^cannot merge `x` in cell two00001: the merged cell would not run: /);
    const cells = (await server.request('/api/notebooks/consts.nb.ts/cells')).body.cells as Cell[];
    expect(cells.map((c) => c.source)).toEqual(['const x = 1', 'const x = 2', 'x + 1']);
  });

  it('delete removes the second definition and the notebook runs', async () => {
    const res = await fix('consts.nb.ts', 'two00001', { name: 'x', action: 'delete' });
    expect(res.status).toBe(200);
    const cells = res.body.cells as Cell[];
    expect(cells.map((c) => c.id)).toEqual(['one00001', 'use00001']);
    expect(result(cells[1])).toBe('2');
  });

  it('a rename the cell would make ambiguous (the name declared again inside a function) is refused', async () => {
    const res = await fix('shadow.nb.ts', 'two00001', { name: 'y', action: 'rename' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe(
      'cannot rename `y` in cell two00001: `y` is declared again inside a function or block of the cell; rename it by hand',
    );
  });

  it('refuses fixes a cell does not offer, unknown cells and bad bodies', async () => {
    expect((await fix('shadow.nb.ts', 'one00001', { name: 'y', action: 'rename' })).status).toBe(422);
    expect((await fix('shadow.nb.ts', 'nothere1', { name: 'y', action: 'delete' })).status).toBe(404);
    const bad = await fix('shadow.nb.ts', 'two00001', { name: 'y', action: 'explode' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/action/);
  });
});

describe('one-click fix for an assignment to another cell’s name', () => {
  it('merge appends the assignment to the defining cell and the notebook runs', async () => {
    const deps = await server.request('/api/notebooks/reassign.nb.ts/dependencies');
    const clean = deps.body.cells.find((c: { id: string }) => c.id === 'clean001');
    expect(clean.problems).toEqual([
      expect.objectContaining({
        kind: 'reassignment',
        name: 'df',
        fixes: [{ action: 'merge', label: 'Merge into cell load0001', into: 'load0001' }],
      }),
    ]);
    const res = await fix('reassign.nb.ts', 'clean001', { name: 'df', action: 'merge' });
    expect(res.status).toBe(200);
    const cells = res.body.cells as Cell[];
    expect(cells.map((c) => c.source)).toEqual(['let df = [3, 1, 2]\ndf = df.filter((v) => v > 1)', 'df.length']);
    expect(cells.map((c) => c.state)).toEqual(['success', 'success']);
    expect(result(cells[1])).toBe('2');
  });
});

describe('renameInSource', () => {
  it('renames bindings and uses, not properties, keys or strings', async () => {
    expect(await renameInSource('const n = 1\nconst o = { n, m: n, n: 2 }\no.n + n + "n"', 'n', 'n_2')).toBe(
      'const n_2 = 1\nconst o = { n: n_2, m: n_2, n: 2 }\no.n + n_2 + "n"',
    );
    expect(await renameInSource('const { a, b = 2 } = src\n[a, b]', 'b', 'b_2')).toBe('const { a, b: b_2 = 2 } = src\n[a, b_2]');
    expect(await renameInSource("import { join } from 'node:path/posix'\njoin('a')", 'join', 'join_2')).toBe(
      "import { join as join_2 } from 'node:path/posix'\njoin_2('a')",
    );
    expect(await renameInSource('const v: Array<number> = [1]\nconst w = v.map((k: number) => k + v.length)', 'v', 'v_2')).toBe(
      'const v_2: Array<number> = [1]\nconst w = v_2.map((k: number) => k + v_2.length)',
    );
    // TypeScript: a parameter of the same name is left alone; a type mentioning the name is refused.
    expect(await renameInSource('const t: number = 1\ntype T = { t: number }\nconst g = (t: number) => t * 2', 't', 't_2')).toBe(
      'const t_2: number = 1\ntype T = { t: number }\nconst g = (t: number) => t * 2',
    );
    expect(await renameInSource('const t: number = 1\nlet u: typeof t = t', 't', 't_2')).toEqual({
      why: '`t` on line 2 is also used in a type or string; rename it by hand',
    });
  });
});
