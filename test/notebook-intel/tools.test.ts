import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { notebookWith, resultText, runCell } from './helpers.js';

let server: TestServer;
const nb = 'tools.nb.ts';
const api = `/api/notebooks/${nb}`;
const ids: { rows: string; total: string; doubled: string; big: string; sloppy: string } = {} as never;

beforeAll(async () => {
  server = await startTestServer();
  await notebookWith(server, 'tools', [
    "const rows = Array.from({ length: 50 }, (_, i) => ({ id: i % 45, score: i === 3 ? -5 : i, name: i % 10 === 0 ? null : 'n' + i }));",
    'const total = rows.reduce((s, r) => s + r.score, 0);',
    'const doubled = total * 2;\ndoubled',
    'const big = new Array(2_000_000).fill(1.5);',
  ]);
  const cells = (await server.request(`${api}/cells`)).body.cells;
  [ids.rows, ids.total, ids.doubled, ids.big] = cells.map((c: { id: string }) => c.id);
  // Not run by notebookWith: it reads a name nobody defines, so it fails when run.
  const sloppy = await server.request(`${api}/cells`, {
    method: 'POST',
    json: {
      name: 'sloppy',
      source:
        'var leftover = 1;\nif (total == 3) {\n  try { missing_name(); } catch (e) {}\n}\nconst label = total > 10 ? "big" : "small";',
    },
  });
  ids.sloppy = sloppy.body.id;
}, 60_000);

afterAll(async () => {
  await server.stop();
});

describe('1. profiler', () => {
  it('reports time and memory per cell, slowest first, and counts reruns', async () => {
    const res = await server.request(`${api}/tools/profile`);
    expect(res.status, res.text).toBe(200);
    const big = res.body.cells.find((c: { cell_id: string }) => c.cell_id === ids.big);
    expect(big.runs).toBe(1);
    // 2M doubles stay referenced by the kernel: at least 8 MB more heap.
    expect(big.max_heap_delta_bytes).toBeGreaterThan(8_000_000);
    const totals = res.body.cells.map((c: { total_ms: number }) => c.total_ms);
    expect(totals).toEqual([...totals].sort((a: number, b: number) => b - a));
    const rerun = await server.request(`${api}/tools/profile?run=true`);
    expect(rerun.body.cells.find((c: { cell_id: string }) => c.cell_id === ids.rows).runs).toBe(2);
  }, 30_000);
});

describe('2. benchmark', () => {
  it('runs a cell N times and answers min, median and max', async () => {
    const res = await server.request(`${api}/tools/benchmark`, { method: 'POST', json: { cell: ids.total, runs: 7 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.durations_ms).toHaveLength(7);
    expect(res.body.min_ms).toBeLessThanOrEqual(res.body.median_ms);
    expect(res.body.median_ms).toBeLessThanOrEqual(res.body.max_ms);
    expect(res.body.min_ms).toBe(Math.min(...res.body.durations_ms));
  });

  it('refuses a failing cell with its error and a bad run count', async () => {
    const failing = await server.request(`${api}/tools/benchmark`, { method: 'POST', json: { cell: ids.sloppy, runs: 2 } });
    expect(failing.status).toBe(422);
    expect(failing.body.detail).toMatch(/missing_name/);
    expect((await server.request(`${api}/tools/benchmark`, { method: 'POST', json: { cell: ids.total, runs: 0 } })).status).toBe(422);
  });
});

describe('3. data validator', () => {
  it('lists violations of type, range, uniqueness and null rules with example rows', async () => {
    const res = await server.request(`${api}/tools/validate`, {
      method: 'POST',
      json: {
        variable: 'rows',
        rules: [
          { column: 'id', unique: true, type: 'integer' },
          { column: 'score', min: 0, max: 100 },
          { column: 'name', not_null: true, pattern: '^n\\d+$' },
        ],
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.valid).toBe(false);
    const byRule = Object.fromEntries(
      res.body.violations.map((v: { column: string; rule: string; count: number }) => [`${v.column}.${v.rule}`, v]),
    );
    expect(Object.keys(byRule).sort()).toEqual(['id.unique', 'name.not_null', 'score.min']);
    expect(byRule['id.unique'].count).toBe(5);
    expect(byRule['score.min'].examples).toEqual([{ row: 3, value: -5 }]);
    expect(byRule['name.not_null'].count).toBe(5);
    const ok = await server.request(`${api}/tools/validate`, {
      method: 'POST',
      json: { variable: 'rows', rules: [{ column: 'score', type: 'number' }] },
    });
    expect(ok.body).toMatchObject({ valid: true, violations: [], rows: 50 });
    const bad = await server.request(`${api}/tools/validate`, {
      method: 'POST',
      json: { variable: 'rows', rules: [{ column: 'nope', unique: true }] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('its columns are: id, score, name');
  });
});

describe('4. code analyzer', () => {
  it('finds undefined and unused names, complexity and lint findings per cell', async () => {
    const res = await server.request(`${api}/tools/analyze`);
    expect(res.status, res.text).toBe(200);
    const sloppy = res.body.cells.find((c: { cell_id: string }) => c.cell_id === ids.sloppy);
    expect(sloppy.undefined_names).toEqual(['missing_name']);
    expect(sloppy.unused_names.sort()).toEqual(['label', 'leftover']);
    // 1 + if + catch + ?: = 4
    expect(sloppy.complexity).toBe(4);
    const rules = sloppy.findings.map((f: { rule: string }) => f.rule);
    expect(rules).toEqual(expect.arrayContaining(['undefined-name', 'no-var', 'eqeqeq', 'no-empty-catch', 'unused-name']));
    expect(sloppy.findings.find((f: { rule: string }) => f.rule === 'eqeqeq').line).toBe(2);
    const rowsCell = res.body.cells.find((c: { cell_id: string }) => c.cell_id === ids.rows);
    expect(rowsCell.undefined_names).toEqual([]);
    expect(rowsCell.unused_names).toEqual([]);
  });
});

describe('5. execution history', () => {
  it('records every run of every cell with its duration and outcome', async () => {
    await server.request(`${api}/cells/${ids.sloppy}/run`, { method: 'POST' });
    const res = await server.request(`${api}/tools/history`);
    expect(res.status).toBe(200);
    const sloppyRuns = res.body.runs.filter((r: { cell_id: string }) => r.cell_id === ids.sloppy);
    // Once in the profiler's ?run=true run, once here; both failed (missing_name is undefined).
    expect(sloppyRuns).toHaveLength(2);
    expect(sloppyRuns.every((r: { status: string }) => r.status === 'error')).toBe(true);
    expect(typeof sloppyRuns[0].duration_ms).toBe('number');
    const only = await server.request(`${api}/tools/history?cell=${ids.rows}`);
    expect(only.body.runs.length).toBeGreaterThanOrEqual(2);
    expect(only.body.runs.every((r: { cell_id: string; status: string }) => r.cell_id === ids.rows && r.status === 'success')).toBe(true);
  });
});

describe('6. lineage', () => {
  it('names the cell that defines a variable and everything upstream and downstream', async () => {
    const res = await server.request(`${api}/tools/lineage/total`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.defined_by).toMatchObject({ cell_id: ids.total, reads: ['rows'] });
    expect(res.body.upstream.map((c: { cell_id: string }) => c.cell_id)).toEqual([ids.rows]);
    expect(res.body.downstream.map((c: { cell_id: string }) => c.cell_id).sort()).toEqual([ids.doubled, ids.sloppy].sort());
    expect(res.body.upstream_variables).toEqual(['rows']);
    expect(res.body.downstream_variables).toEqual(expect.arrayContaining(['doubled', 'leftover', 'label']));
    expect((await server.request(`${api}/tools/lineage/nothing_here`)).status).toBe(404);
  });
});

describe('7. environment', () => {
  it('reports Node, memory and installed packages', async () => {
    const res = await server.request('/api/tools/environment');
    expect(res.status).toBe(200);
    expect(res.body.node).toBe(process.version);
    expect(res.body.memory.total_bytes).toBeGreaterThan(0);
    const arquero = res.body.packages.hangar.find((p: { name: string }) => p.name === 'arquero');
    expect(arquero.installed).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('8. package installer', () => {
  it('installs a package into the notebook workspace so cells can import it', async () => {
    const pkg = join(server.root, 'local-pkg');
    await mkdir(pkg, { recursive: true });
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'hangar-test-greeter', version: '1.2.3', main: 'index.js' }));
    await writeFile(join(pkg, 'index.js'), "exports.hello = (name) => 'hello ' + name;\n");
    const res = await server.request('/api/tools/packages', { method: 'POST', json: { package: pkg } });
    expect(res.status, res.text).toBe(201);
    expect(res.body.installed).toEqual([{ name: 'hangar-test-greeter', version: '1.2.3' }]);
    const manifest = JSON.parse(await readFile(join(server.root, 'notebooks', 'package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies)).toContain('hangar-test-greeter');
    const cell = await runCell(server, nb, "import { hello } from 'hangar-test-greeter';\nconst greeting = hello('notebook');\ngreeting");
    expect(cell.state, JSON.stringify(cell.outputs)).toBe('success');
    expect(resultText(cell)).toContain('hello notebook');
    const env = await server.request('/api/tools/environment');
    expect(env.body.packages.notebooks).toEqual([expect.objectContaining({ name: 'hangar-test-greeter', installed: '1.2.3' })]);
  }, 120_000);

  it("shows npm's error verbatim when the install fails", async () => {
    const res = await server.request('/api/tools/packages', { method: 'POST', json: { package: join(server.root, 'no-such-folder') } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/^npm install .* failed \(exit \d+\):\n/);
    expect(res.body.detail).toMatch(/npm (error|ERR!)/);
    const option = await server.request('/api/tools/packages', { method: 'POST', json: { package: '--global' } });
    expect(option.status).toBe(422);
  }, 120_000);
});

describe('9. converter and 10. diff', () => {
  it('converts .nb.ts to .ipynb, writes it once, and diffs it against the edited notebook', async () => {
    const res = await server.request('/api/tools/convert', { method: 'POST', json: { notebook: nb, save: true } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ from: nb, to: 'tools.ipynb', format: 'ipynb', saved: true });
    const doc = JSON.parse(res.body.content);
    expect(doc.nbformat).toBe(4);
    expect(doc.cells.some((c: { source: string | string[] }) => [c.source].flat().join('').includes('const doubled'))).toBe(true);
    expect((await server.request('/api/tools/convert', { method: 'POST', json: { notebook: nb, save: true } })).status).toBe(409);

    await server.request(`${api}/cells/${ids.doubled}`, { method: 'PATCH', json: { source: 'const doubled = total * 3;\ndoubled' } });
    const diff = await server.request('/api/tools/diff', { method: 'POST', json: { a: 'tools.ipynb', b: nb } });
    expect(diff.status, diff.text).toBe(200);
    expect(diff.body.identical).toBe(false);
    expect(diff.body.summary.changed).toBe(1);
    const changed = diff.body.cells.find((c: { status: string }) => c.status === 'changed');
    expect(changed.id).toBe(ids.doubled);
    expect(diff.body.text).toContain('total * 3');
    expect((await server.request('/api/tools/diff', { method: 'POST', json: { a: 'nope.nb.ts', b: nb } })).status).toBe(404);
  });
});

describe('11. snippets', () => {
  it('searches the library and inserts snippets that run', async () => {
    const search = await server.request('/api/tools/snippets?q=pivot');
    expect(search.body.snippets[0].id).toBe('pivot');
    const all = (await server.request('/api/tools/snippets')).body.snippets;
    expect(all.length).toBeGreaterThanOrEqual(8);
    await server.write('notebooks/data.csv', 'a,b\n1,x\n2,y\n');
    await server.write('notebooks/data.json', '[{"a":1},{"a":2}]');
    await server.request('/api/notebooks', { method: 'POST', json: { name: 'snips', cells: [] } });
    for (const snippet of all) {
      const inserted = await server.request(`/api/tools/snippets/${snippet.id}/insert`, {
        method: 'POST',
        json: { notebook: 'snips.nb.ts' },
      });
      expect(inserted.status, inserted.text).toBe(201);
      const ran = await server.request(`/api/notebooks/snips.nb.ts/cells/${inserted.body.cell.id}/run`, { method: 'POST' });
      const cell = ran.body.cells.find((c: { id: string }) => c.id === inserted.body.cell.id);
      expect(cell.state, `${snippet.id}: ${JSON.stringify(cell.outputs)}`).toBe('success');
    }
    expect((await server.request('/api/tools/snippets/nope/insert', { method: 'POST', json: { notebook: 'snips.nb.ts' } })).status).toBe(
      404,
    );
  }, 60_000);
});

describe('12. cell dependencies', () => {
  it('answers the graph as nodes and edges with the names on each edge', async () => {
    const res = await server.request(`${api}/tools/dependencies`);
    expect(res.status).toBe(200);
    expect(res.body.nodes.find((n: { id: string }) => n.id === ids.total)).toMatchObject({ reads: ['rows'], writes: ['total'] });
    expect(res.body.edges).toEqual(
      expect.arrayContaining([
        { from: ids.rows, to: ids.total, names: ['rows'] },
        { from: ids.total, to: ids.doubled, names: ['total'] },
      ]),
    );
    expect(res.body.order.indexOf(ids.rows)).toBeLessThan(res.body.order.indexOf(ids.total));
  });
});

describe('13. search', () => {
  it('finds text in cell sources, names and outputs across notebooks', async () => {
    const source = await server.request('/api/tools/search?q=reduce');
    expect(source.status).toBe(200);
    expect(source.body.hits).toEqual(
      expect.arrayContaining([expect.objectContaining({ notebook: nb, cell_id: ids.total, where: 'source', line: 1 })]),
    );
    const named = await server.request('/api/tools/search?q=SLOPPY&in=name');
    // In the notebook and in its .ipynb conversion written above.
    expect(named.body.hits.map((h: { notebook: string }) => h.notebook).sort()).toEqual(['tools.ipynb', nb]);
    expect(named.body.hits.every((h: { cell_id: string; where: string }) => h.cell_id === ids.sloppy && h.where === 'name')).toBe(true);
    const output = await server.request('/api/tools/search?q=hello%20notebook&in=output');
    expect(output.body.hits.length).toBeGreaterThan(0);
    expect(output.body.hits.every((h: { where: string; text: string }) => h.where === 'output' && h.text.includes('hello notebook'))).toBe(
      true,
    );
    expect((await server.request('/api/tools/search')).status).toBe(422);
  });
});

describe('OpenAPI', () => {
  it('documents the tool routes', async () => {
    const doc = (await server.request('/openapi.json')).body;
    for (const path of [
      '/api/smartprep/{var_name}',
      '/api/algorithm-match/{var_name}',
      '/api/patterns/{pattern_id}/apply',
      '/api/notebooks/{nb}/tools/benchmark',
      '/api/tools/search',
      '/api/schedules/{schedule_id}/runs',
    ]) {
      expect(Object.keys(doc.paths), path).toContain(path);
    }
  });
});

describe('error paths of the tool routes', () => {
  it('answers 404 for an unknown notebook on every notebook-scoped tool', async () => {
    const ghost = '/api/notebooks/ghost.nb.ts/tools';
    for (const [method, path, json] of [
      ['GET', `${ghost}/profile`, undefined],
      ['POST', `${ghost}/benchmark`, { cell: 'x', runs: 1 }],
      ['POST', `${ghost}/validate`, { variable: 'rows', rules: [{ column: 'id', unique: true }] }],
      ['GET', `${ghost}/analyze`, undefined],
      ['GET', `${ghost}/history`, undefined],
      ['GET', `${ghost}/lineage/rows`, undefined],
      ['GET', `${ghost}/dependencies`, undefined],
    ] as const) {
      const res = await server.request(path, { method, ...(json ? { json } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.detail).toMatch(/notebook ghost\.nb\.ts not found/);
    }
  });

  it('answers 404 for an unknown cell or variable and 422 for bad bodies', async () => {
    expect((await server.request(`${api}/tools/benchmark`, { method: 'POST', json: { cell: 'nocell', runs: 1 } })).status).toBe(404);
    const unknownVar = await server.request(`${api}/tools/validate`, {
      method: 'POST',
      json: { variable: 'nothing', rules: [{ column: 'a', unique: true }] },
    });
    expect(unknownVar.status).toBe(404);
    expect(unknownVar.body.detail).toContain('variable "nothing" is not defined in notebook tools.nb.ts');
    const noRules = await server.request(`${api}/tools/validate`, { method: 'POST', json: { variable: 'rows', rules: [] } });
    expect(noRules.status).toBe(422);
    expect(noRules.body.detail).toMatch(/body\.rules/);
    expect((await server.request('/api/tools/convert', { method: 'POST', json: { notebook: 'ghost.nb.ts' } })).status).toBe(404);
    expect((await server.request('/api/tools/convert', { method: 'POST', json: { notebook: '../escape.nb.ts' } })).status).toBe(422);
    expect((await server.request('/api/tools/diff', { method: 'POST', json: { a: nb } })).status).toBe(422);
  });
});
